package workflow

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
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
	observed reconcilers.Observed[v1alpha1.WorkflowStatus]
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
	ready := metav1.Condition{Type: v1alpha1.ConditionReady, Status: metav1.ConditionTrue, Reason: ReasonValid,
		ObservedGeneration: st.ObservedGeneration, Message: "every tool it calls is offered"}
	switch {
	case entry.Err != nil:
		ready.Status, ready.Reason, ready.Message = metav1.ConditionFalse, ReasonInvalid, st.ValidationErrors[0]
	case len(st.ValidationErrors) > 0 && len(st.MissingTools) == 0:
		ready.Status, ready.Reason, ready.Message = metav1.ConditionFalse, ReasonInvalid, st.ValidationErrors[0]
	case len(st.ValidationErrors) > 0:
		ready.Status, ready.Reason = metav1.ConditionFalse, ReasonToolsMissing
		ready.Message = "tools not offered by any running server: " + strings.Join(st.MissingTools, ", ")
	case len(waiting) > 0:
		slices.Sort(waiting)
		ready.Status, ready.Reason = metav1.ConditionFalse, ReasonWaitingForServer
		ready.Message = "waiting for mcp servers still starting (" + strings.Join(waiting, ", ") + ") to offer: " +
			strings.Join(st.MissingTools, ", ")
	}
	prev, _ := r.observed.Get(req.Key)
	st.Conditions = append([]metav1.Condition(nil), prev.Conditions...)
	meta.SetStatusCondition(&st.Conditions, ready)
	r.observed.Set(req.Key, st)
	if entry.Err != nil {
		return reconcilers.Result{Err: reconcilers.Permanent(entry.Err)}
	}
	return reconcilers.Result{}
}

// List returns every Workflow declared or recorded.
func (r *Reconciler) List(context.Context) ([]events.Key, error) {
	return r.observed.Union(r.index.Keys(v1alpha1.KindWorkflow)), nil
}

// Status returns the status recorded at key's last reconcile, as a
// v1alpha1.WorkflowStatus the caller may keep.
func (r *Reconciler) Status(key events.Key) (any, bool) {
	st, ok := r.observed.Get(key)
	if !ok {
		return nil, false
	}
	return *st.DeepCopy(), true
}

// Recorded returns the status recorded at key's last reconcile without
// copying it, nor boxing it in an any as Status does: its slices are
// shared, to be read and never changed. A reconcile records a new status
// and never changes one it recorded, so what Recorded returned stays as it
// was. The workflow engine reads every workflow's verdict after every
// burst; a deep copy each was a fifth of that, and boxing each 26 MB of
// garbage per burst with 100,000 workflows.
func (r *Reconciler) Recorded(key events.Key) (v1alpha1.WorkflowStatus, bool) {
	return r.observed.Get(key)
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
