package workflow

import (
	"slices"

	"github.com/musterd/musterd/pkg/apis/muster/v1alpha1"
	"github.com/musterd/musterd/pkg/events"
)

// Availability is whether a workflow can run now.
type Availability struct {
	// Available: the definition in force is sound and every tool it needs
	// (needs.go), through the workflows it calls at any depth, is offered.
	Available bool
	// MissingTools are the tools it needs that nothing offers now, sorted,
	// without repeats: a server's tool, or the tool of a workflow called
	// but not declared.
	MissingTools []string
}

// Availability judges the workflow at key as a reconcile would now, by
// the same walk of what it needs (walkNeeds), against the tools offered at
// this moment: what muster's core_workflow_available answers. The
// recorded verdict (Status) says the same once the pipeline has brought
// the workflow back after a change of the tools or of a workflow it calls;
// Availability does not wait for that. A server still starting offers
// nothing yet. found is false when no workflow is declared at key.
func (r *Reconciler) Availability(key events.Key) (a Availability, found bool) {
	entry, declared := r.index.Get(key)
	if !declared {
		return Availability{}, false
	}
	wf, _ := entry.Object.(*v1alpha1.Workflow)
	if wf == nil {
		return Availability{}, true
	}
	walkNeeds(r.index, wf, yieldSink(func(n need) bool {
		if !r.offered(n.tool) {
			a.MissingTools = append(a.MissingTools, n.tool)
		}
		return true
	}))
	slices.Sort(a.MissingTools)
	a.MissingTools = slices.Compact(a.MissingTools)
	a.Available = len(a.MissingTools) == 0 && entry.Err == nil && !r.badTemplates(key, wf) && r.cycle(wf) == nil
	return a, true
}

// badTemplates reports whether a template of wf does not parse: as the
// last reconcile found, if it judged wf, else found now.
func (r *Reconciler) badTemplates(key events.Key, wf *v1alpha1.Workflow) bool {
	if v, ok := r.observed.Get(key); ok && v.def == wf {
		return v.badTemplates
	}
	return len(templateErrors(wf)) > 0
}
