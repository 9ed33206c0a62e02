package workflow

import (
	"context"
	"errors"
	"iter"
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
	spellOut bool                   // tests: no compact verdicts (verdict.go)
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
// verdict.
func (r *Reconciler) Reconcile(_ context.Context, req reconcilers.Request) reconcilers.Result {
	entry, declared := r.index.Get(req.Key)
	if !declared {
		r.observed.Delete(req.Key)
		return reconcilers.Result{Deleted: true}
	}
	wf, _ := entry.Object.(*v1alpha1.Workflow)
	v := r.judge(wf, entry.Err, entry.Warnings)
	// The condition's transition is when its status last changed, as
	// meta.SetStatusCondition keeps it.
	if prev, ok := r.observed.Get(req.Key); ok && prev.ready() == v.ready() {
		v.since = prev.since
	} else {
		v.since = time.Now().UnixNano()
	}
	r.observed.Set(req.Key, v)
	if entry.Err != nil {
		return reconcilers.Result{Err: reconcilers.Permanent(entry.Err)}
	}
	return reconcilers.Result{}
}

// judge checks wf, the definition in force (nil if there is none), whose
// file's problem now is fileErr (nil if none) and whose warnings are
// warnings, against the tools on offer. The verdict is compact
// (verdict.go) unless it holds more than the tools that no server offers.
func (r *Reconciler) judge(wf *v1alpha1.Workflow, fileErr error, warnings []string) verdict {
	j := judging{r: r, v: verdict{def: wf}, errs: messages(fileErr), compact: fileErr == nil && len(warnings) == 0 && !r.spellOut}
	if wf != nil {
		walkNeeds(r.index, wf, &j)                     // needs.go
		if more := templateErrors(wf); len(more) > 0 { // templates.go
			j.errs, j.compact, j.v.badTemplates = append(j.errs, more...), false, true
		}
		if c := r.cycle(wf); c != nil {
			j.errs, j.compact = append(j.errs, "calls itself: "+strings.Join(c, " → ")), false
		}
	}
	v, errs, missing, waiting := j.v, j.errs, j.missing, j.waiting
	// A workflow waiting for a server still starting has no validation
	// error, and is not valid yet either: valid is what makes it a tool
	// to run, and its tools are not there.
	v.valid = len(errs) == 0 && len(waiting) == 0
	switch {
	case fileErr != nil, len(errs) > 0 && len(missing) == 0:
		v.reason = reasonInvalid
	case len(errs) > 0:
		v.reason = reasonToolsMissing
	case len(waiting) > 0:
		v.reason = reasonWaitingForServer
	}
	if !j.compact {
		slices.Sort(missing)
		slices.Sort(waiting)
		v.missing, v.lists = 0, &verdictLists{validationErrors: errs, missingTools: slices.Compact(missing), waiting: waiting, warnings: warnings,
			hidden: slices.Compact(slices.Sorted(slices.Values(j.hidden)))}
	}
	return v
}

// judging is one judge's findings, taking the needs of the workflow
// judged (walkNeeds) one by one.
type judging struct {
	r       *Reconciler
	v       verdict
	errs    []string
	missing []string // every tool not offered, sorted at the end
	waiting []string // servers starting that may offer a missing tool
	hidden  []string // missing tools an exposure policy or a conflict holds back, each with why
	compact bool
}

func (j *judging) take(n need) bool {
	if j.r.offered(n.tool) {
		return true
	}
	j.missing = append(j.missing, n.tool)
	if server, starting := j.r.tools.StartingFor(n.tool); starting {
		// Not invalid until the start failed: the bridge brings this
		// workflow back when it ends, either way.
		if !slices.Contains(j.waiting, server.Name) {
			j.waiting = append(j.waiting, server.Name)
		}
		j.compact = false
		return true
	}
	if why, hidden := j.r.tools.Why(n.tool); hidden {
		// An exposure policy or a conflict holds it back: the verdict
		// says which, spelled out.
		j.errs = append(j.errs, n.where()+": tool "+n.tool+" is not exposed: "+why)
		j.hidden = append(j.hidden, n.tool+": "+why)
		j.compact = false
		return true
	}
	j.errs = append(j.errs, n.missing())
	// A compact verdict spells out only its own references.
	j.compact = j.compact && n.via == nil && n.i < maxCompactReferences
	j.v.missing |= 1 << n.i
	return true
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
	st.Conditions = []metav1.Condition{v.condition(st)}
	return *st.DeepCopy(), true
}

// Recorded returns the verdict of key's last reconcile, its status without
// the Ready condition (Status has it), without copying it, nor boxing it
// in an any as Status does: its slices are to be read and never changed
// (a verdict spelled out shares its own). A reconcile records a new
// verdict and never changes one it recorded, so what Recorded returned
// stays as it was. The workflow engine reads every workflow's verdict
// after every burst; a deep copy or a boxing of each would make garbage
// in proportion to every workflow, at every burst.
func (r *Reconciler) Recorded(key events.Key) (v1alpha1.WorkflowStatus, bool) {
	v, ok := r.observed.Get(key)
	return v.status(), ok
}

// Valid reports whether the last reconcile of key found it valid, and
// whether there was one: Recorded's Valid and ok, without spelling out
// the status.
func (r *Reconciler) Valid(key events.Key) (valid, known bool) {
	v, ok := r.observed.Get(key)
	return v.valid, ok
}

// reference is one tool named in a workflow, and where: "step build",
// "step fan.a condition", "onFailure step cleanup". The place is spelled
// out only for a message (where), so that walking a definition's tools
// allocates nothing but a sub-step's scope.
type reference struct {
	scope     string // "step ", "step fan.", "onFailure step "
	id        string
	condition bool // the step's condition names the tool, not the step
	tool      string
}

func (ref reference) where() string {
	if ref.condition {
		return ref.scope + ref.id + " condition"
	}
	return ref.scope + ref.id
}

// missing is the validation error of a tool no server offers.
func (ref reference) missing() string {
	return ref.where() + ": tool " + ref.tool + " is not offered by any running server"
}

// references yields every tool wf names, in the order of the definition:
// steps, their conditions, forEach and parallel sub-steps and their
// conditions, then onFailure steps and theirs.
func references(wf *v1alpha1.Workflow) iter.Seq[reference] {
	return func(yield func(reference) bool) {
		step := func(scope, id, tool string, cond *v1alpha1.WorkflowCondition) bool {
			if tool != "" && !yield(reference{scope: scope, id: id, tool: tool}) {
				return false
			}
			return cond == nil || cond.Tool == "" || yield(reference{scope: scope, id: id, condition: true, tool: cond.Tool})
		}
		subs := func(scope string, subs []v1alpha1.WorkflowSubStep) bool {
			for _, s := range subs {
				if !step(scope, s.ID, s.Tool, s.Condition) {
					return false
				}
			}
			return true
		}
		for _, s := range wf.Spec.Steps {
			if !step("step ", s.ID, s.Tool, s.Condition) {
				return
			}
			if s.ForEach != nil && len(s.ForEach.Steps) > 0 && !subs("step "+s.ID+".", s.ForEach.Steps) {
				return
			}
			if len(s.Parallel) > 0 && !subs("step "+s.ID+".", s.Parallel) {
				return
			}
		}
		subs("onFailure step ", wf.Spec.OnFailure)
	}
}

// Tools returns the tools wf's steps, sub-steps and conditions call,
// sorted and without repeats.
func Tools(wf *v1alpha1.Workflow) []string {
	var tools []string
	for ref := range references(wf) {
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
