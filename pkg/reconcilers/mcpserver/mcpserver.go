package mcpserver

import (
	"context"

	"github.com/musterd/musterd/pkg/apis/muster/v1alpha1"
	"github.com/musterd/musterd/pkg/events"
	"github.com/musterd/musterd/pkg/reconcilers"
	"github.com/musterd/musterd/pkg/resources"
)

// Reconciler reconciles MCPServers against the index.
type Reconciler struct {
	index    *resources.Index
	observed reconcilers.Observed[v1alpha1.MCPServerStatus]
}

var (
	_ reconcilers.Reconciler     = (*Reconciler)(nil)
	_ reconcilers.StatusReporter = (*Reconciler)(nil)
)

// New returns a reconciler reading desired state from index.
func New(index *resources.Index) *Reconciler { return &Reconciler{index: index} }

// Kind is v1alpha1.KindMCPServer.
func (r *Reconciler) Kind() string { return v1alpha1.KindMCPServer }

// Reconcile records the MCPServer in force for req.Key.
func (r *Reconciler) Reconcile(_ context.Context, req reconcilers.Request) reconcilers.Result {
	entry, declared := r.index.Get(req.Key)
	if !declared {
		r.observed.Delete(req.Key)
		return reconcilers.Result{Deleted: true}
	}
	if server, ok := entry.Object.(*v1alpha1.MCPServer); ok {
		r.observed.Set(req.Key, v1alpha1.MCPServerStatus{
			State:              v1alpha1.MCPServerStateStopped,
			ObservedGeneration: server.Generation,
		})
	}
	if entry.Err != nil {
		return reconcilers.Result{Err: reconcilers.Permanent(entry.Err)}
	}
	return reconcilers.Result{}
}

// List returns every MCPServer declared or recorded.
func (r *Reconciler) List(context.Context) ([]events.Key, error) {
	return r.observed.Union(r.index.Keys(v1alpha1.KindMCPServer)), nil
}

// Status returns the status last recorded for key.
func (r *Reconciler) Status(key events.Key) (any, bool) {
	st, ok := r.observed.Get(key)
	return st, ok
}
