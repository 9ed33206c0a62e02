package workflow

import (
	"context"
	"errors"
	"slices"

	"github.com/musterd/musterd/pkg/apis/muster/v1alpha1"
	"github.com/musterd/musterd/pkg/events"
	"github.com/musterd/musterd/pkg/reconcilers"
	"github.com/musterd/musterd/pkg/resources"
)

// Reconciler reconciles Workflows against the index.
type Reconciler struct {
	index    *resources.Index
	observed reconcilers.Observed[v1alpha1.WorkflowStatus]
}

var (
	_ reconcilers.Reconciler     = (*Reconciler)(nil)
	_ reconcilers.StatusReporter = (*Reconciler)(nil)
)

// New returns a reconciler reading desired state from index.
func New(index *resources.Index) *Reconciler { return &Reconciler{index: index} }

// Kind is v1alpha1.KindWorkflow.
func (r *Reconciler) Kind() string { return v1alpha1.KindWorkflow }

// Reconcile validates and records the Workflow in force for req.Key.
func (r *Reconciler) Reconcile(_ context.Context, req reconcilers.Request) reconcilers.Result {
	entry, declared := r.index.Get(req.Key)
	if !declared {
		r.observed.Delete(req.Key)
		return reconcilers.Result{Deleted: true}
	}
	var st v1alpha1.WorkflowStatus
	if wf, ok := entry.Object.(*v1alpha1.Workflow); ok {
		st.StepCount = len(wf.Spec.Steps)
		st.ReferencedTools = Tools(wf)
		st.ObservedGeneration = wf.Generation
	}
	st.Valid = entry.Err == nil
	st.ValidationErrors = messages(entry.Err)
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

// Status returns the status last recorded for key.
func (r *Reconciler) Status(key events.Key) (any, bool) {
	st, ok := r.observed.Get(key)
	return st, ok
}

// Tools returns the tools wf's steps, sub-steps and conditions call,
// sorted and without repeats.
func Tools(wf *v1alpha1.Workflow) []string {
	var tools []string
	add := func(tool string, cond *v1alpha1.WorkflowCondition) {
		if tool != "" {
			tools = append(tools, tool)
		}
		if cond != nil && cond.Tool != "" {
			tools = append(tools, cond.Tool)
		}
	}
	addSubs := func(subs []v1alpha1.WorkflowSubStep) {
		for _, s := range subs {
			add(s.Tool, s.Condition)
		}
	}
	for _, s := range wf.Spec.Steps {
		add(s.Tool, s.Condition)
		if s.ForEach != nil {
			addSubs(s.ForEach.Steps)
		}
		addSubs(s.Parallel)
	}
	addSubs(wf.Spec.OnFailure)
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
