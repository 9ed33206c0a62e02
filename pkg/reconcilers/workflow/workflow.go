package workflow

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/musterd/musterd/pkg/apis/muster/v1alpha1"
	"github.com/musterd/musterd/pkg/catalogue"
	"github.com/musterd/musterd/pkg/events"
	"github.com/musterd/musterd/pkg/reconcilers"
	"github.com/musterd/musterd/pkg/resources"
)

// Reasons of the Ready condition.
const (
	ReasonValid        = "Valid"
	ReasonInvalid      = "Invalid"
	ReasonToolsMissing = "ToolsMissing"
	// ReasonWaitingForServer: every tool it calls is offered or may be
	// offered by a server still starting.
	ReasonWaitingForServer = "WaitingForServer"
)

// Reconciler reconciles Workflows against the index and the catalogue.
type Reconciler struct {
	index    *resources.Index
	tools    *catalogue.Catalogue
	observed reconcilers.Observed[verdict]
	builtin  func(tool string) bool // nested.go
}

var (
	_ reconcilers.Reconciler     = (*Reconciler)(nil)
	_ reconcilers.StatusReporter = (*Reconciler)(nil)
)

// New returns a reconciler reading desired state from index and the tools
// on offer from cat.
func New(index *resources.Index, cat *catalogue.Catalogue, opts ...Option) *Reconciler {
	r := &Reconciler{index: index, tools: cat}
	for _, o := range opts {
		o(r)
	}
	return r
}

// Kind is v1alpha1.KindWorkflow.
func (r *Reconciler) Kind() string { return v1alpha1.KindWorkflow }

// Reconcile validates the Workflow in force for req.Key and records its
// status.
func (r *Reconciler) Reconcile(_ context.Context, req reconcilers.Request) reconcilers.Result {
	entry, declared := r.index.Get(req.Key)
	if !declared {
		r.observed.Delete(req.Key)
		return reconcilers.Result{Deleted: true}
	}
	st := v1alpha1.WorkflowStatus{ValidationErrors: messages(entry.Err)}
	var waiting []string // servers starting that may offer a missing tool
	if wf, ok := entry.Object.(*v1alpha1.Workflow); ok {
		st.StepCount = len(wf.Spec.Steps)
		st.ReferencedTools = Tools(wf)
		st.ObservedGeneration = wf.Generation
		for _, ref := range references(wf) {
			if r.offered(ref.tool) {
				continue
			}
			if server, starting := r.tools.StartingFor(ref.tool); starting {
				// Not invalid until the start failed: the bridge brings
				// this workflow back when it ends, either way.
				if !slices.Contains(waiting, server.Name) {
					waiting = append(waiting, server.Name)
				}
				st.MissingTools = append(st.MissingTools, ref.tool)
				continue
			}
			st.ValidationErrors = append(st.ValidationErrors,
				fmt.Sprintf("%s: tool %s is not offered by any running server", ref.where, ref.tool))
			st.MissingTools = append(st.MissingTools, ref.tool)
		}
		slices.Sort(st.MissingTools)
		st.MissingTools = slices.Compact(st.MissingTools)
		st.ValidationErrors = append(st.ValidationErrors, templateErrors(wf)...) // templates.go
		if c := r.cycle(wf); c != nil {
			st.ValidationErrors = append(st.ValidationErrors, "calls itself: "+strings.Join(c, " → "))
		}
	}
	// A workflow waiting for a server still starting has no validation
	// error, and is not valid yet either: valid is what makes it a tool
	// to run, and its tools are not there.
	st.Valid = len(st.ValidationErrors) == 0 && len(waiting) == 0
	v := verdictOf(st, reasonValid)
	switch {
	case entry.Err != nil, len(st.ValidationErrors) > 0 && len(st.MissingTools) == 0:
		v.reason = reasonInvalid
	case len(st.ValidationErrors) > 0:
		v.reason = reasonToolsMissing
	case len(waiting) > 0:
		slices.Sort(waiting)
		v.reason, v.waiting = reasonWaitingForServer, waiting
	}
	// The condition's transition is when its status last changed, as
	// meta.SetStatusCondition keeps it.
	if prev, ok := r.observed.Get(req.Key); ok && prev.ready() == v.ready() {
		v.since = prev.since
	} else {
		v.since = metav1.NewTime(time.Now())
	}
	r.observed.Set(req.Key, v)
	if entry.Err != nil {
		return reconcilers.Result{Err: reconcilers.Permanent(entry.Err)}
	}
	return reconcilers.Result{}
}

// verdict is what a reconcile records of a workflow: its status but for
// the Ready condition, which condition builds from the rest when the
// status is read. Its message joins the missing tools (or repeats the
// first validation error) and is read far less often than it is made:
// kept in every status, the conditions and their messages were a quarter
// of the 51 MB the reconciler held for 100,000 workflows (issue #15).
//
// Its fields are the status's, laid out without what a recorded status
// never holds (the conditions) and with the reason as a byte: 136 bytes
// rather than the 184 of a WorkflowStatus with a reason string, in a map
// of one verdict per workflow.
type verdict struct {
	validationErrors []string
	referencedTools  []string
	missingTools     []string
	waiting          []string    // reasonWaitingForServer: the servers still starting, sorted
	since            metav1.Time // the Ready condition's last transition
	generation       int64
	steps            int32 // a file cannot hold 2³¹ steps
	reason           readyReason
	valid            bool
}

// readyReason is the Ready condition's reason, one of the Reason*
// constants, as verdict keeps it.
type readyReason uint8

const (
	reasonValid readyReason = iota
	reasonInvalid
	reasonToolsMissing
	reasonWaitingForServer
)

// String is the reason's Reason* constant.
func (r readyReason) String() string {
	return [...]string{ReasonValid, ReasonInvalid, ReasonToolsMissing, ReasonWaitingForServer}[r]
}

// verdictOf records st (whose conditions it drops) with reason.
func verdictOf(st v1alpha1.WorkflowStatus, reason readyReason) verdict {
	return verdict{validationErrors: st.ValidationErrors, referencedTools: st.ReferencedTools,
		missingTools: st.MissingTools, generation: st.ObservedGeneration, steps: int32(st.StepCount),
		reason: reason, valid: st.Valid}
}

// status is v's status without conditions. Its slices are v's.
func (v verdict) status() v1alpha1.WorkflowStatus {
	return v1alpha1.WorkflowStatus{Valid: v.valid, ValidationErrors: v.validationErrors,
		ReferencedTools: v.referencedTools, MissingTools: v.missingTools, StepCount: int(v.steps),
		ObservedGeneration: v.generation}
}

func (v verdict) ready() bool { return v.reason == reasonValid }

// condition is v's Ready condition.
func (v verdict) condition() metav1.Condition {
	c := metav1.Condition{Type: v1alpha1.ConditionReady, Status: metav1.ConditionFalse, Reason: v.reason.String(),
		ObservedGeneration: v.generation, LastTransitionTime: v.since}
	switch v.reason {
	case reasonValid:
		c.Status, c.Message = metav1.ConditionTrue, "every tool it calls is offered"
	case reasonInvalid:
		c.Message = v.validationErrors[0]
	case reasonToolsMissing:
		c.Message = "tools not offered by any running server: " + strings.Join(v.missingTools, ", ")
	case reasonWaitingForServer:
		c.Message = "waiting for mcp servers still starting (" + strings.Join(v.waiting, ", ") + ") to offer: " +
			strings.Join(v.missingTools, ", ")
	}
	return c
}

// List returns every Workflow declared or recorded.
func (r *Reconciler) List(context.Context) ([]events.Key, error) {
	return r.observed.Union(r.index.Keys(v1alpha1.KindWorkflow)), nil
}

// Status returns the status recorded at key's last reconcile, as a
// v1alpha1.WorkflowStatus the caller may keep.
func (r *Reconciler) Status(key events.Key) (any, bool) {
	v, ok := r.observed.Get(key)
	if !ok {
		return nil, false
	}
	st := v.status()
	st = *st.DeepCopy()
	st.Conditions = []metav1.Condition{v.condition()}
	return st, true
}

// Recorded returns the verdict of key's last reconcile, its status without
// the Ready condition (Status has it), without copying it, nor boxing it
// in an any as Status does: its slices are shared, to be read and never
// changed. A reconcile records a new status and never changes one it
// recorded, so what Recorded returned stays as it was. The workflow engine
// reads every workflow's verdict after every burst; a deep copy each was a
// fifth of that, and boxing each 26 MB of garbage per burst with 100,000
// workflows.
func (r *Reconciler) Recorded(key events.Key) (v1alpha1.WorkflowStatus, bool) {
	v, ok := r.observed.Get(key)
	return v.status(), ok
}

// reference is one tool named in a workflow, and where.
type reference struct {
	where string // "step build", "step fan.a condition", "onFailure step cleanup"
	tool  string
}

// references lists every tool wf names, in the order of the definition:
// steps, their conditions, forEach and parallel sub-steps and their
// conditions, then onFailure steps and theirs.
func references(wf *v1alpha1.Workflow) []reference {
	var refs []reference
	add := func(where, tool string, cond *v1alpha1.WorkflowCondition) {
		if tool != "" {
			refs = append(refs, reference{where, tool})
		}
		if cond != nil && cond.Tool != "" {
			refs = append(refs, reference{where + " condition", cond.Tool})
		}
	}
	addSubs := func(where string, subs []v1alpha1.WorkflowSubStep) {
		for _, s := range subs {
			add(where+s.ID, s.Tool, s.Condition)
		}
	}
	for _, s := range wf.Spec.Steps {
		add("step "+s.ID, s.Tool, s.Condition)
		if s.ForEach != nil {
			addSubs("step "+s.ID+".", s.ForEach.Steps)
		}
		addSubs("step "+s.ID+".", s.Parallel)
	}
	addSubs("onFailure step ", wf.Spec.OnFailure)
	return refs
}

// Tools returns the tools wf's steps, sub-steps and conditions call,
// sorted and without repeats.
func Tools(wf *v1alpha1.Workflow) []string {
	var tools []string
	for _, ref := range references(wf) {
		tools = append(tools, ref.tool)
	}
	slices.Sort(tools)
	return slices.Compact(tools)
}

// messages lists the problems of err, one per field error.
func messages(err error) []string {
	if err == nil {
		return nil
	}
	var fes v1alpha1.FieldErrors
	if errors.As(err, &fes) && len(fes) > 0 {
		out := make([]string, len(fes))
		for i, fe := range fes {
			out[i] = fe.Error()
		}
		return out
	}
	return []string{err.Error()}
}
