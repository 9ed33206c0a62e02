package replay

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"sync"

	"k8s.io/utils/clock"

	"github.com/musterd/musterd/pkg/events"
	"github.com/musterd/musterd/pkg/eventtrace"
	"github.com/musterd/musterd/pkg/reconcilers"
)

// recordedOutcomes returns a reconciler per kind of resource in tr, each
// replaying its keys' recorded outcomes. Every kind in the trace gets one,
// so a key the recording reconciled and a key it only changed are handled
// alike.
func recordedOutcomes(tr *eventtrace.Trace, declared *declaredKeys, clk clock.PassiveClock) []reconcilers.Reconciler {
	byKind := map[string]*outcomeReconciler{}
	reconcilerOf := func(kind string) *outcomeReconciler {
		r := byKind[kind]
		if r == nil {
			r = &outcomeReconciler{kind: kind, declared: declared, clock: clk, outcomes: map[events.Key][]events.Event{}}
			byKind[kind] = r
		}
		return r
	}
	for _, e := range tr.Entries {
		switch v := e.Event.(type) {
		case events.ResourceSynced, events.ResourceFailed:
			key := v.(events.Keyed).ResourceKey().Canonical()
			r := reconcilerOf(key.Kind)
			r.outcomes[key] = append(r.outcomes[key], v)
		case events.Keyed:
			reconcilerOf(v.ResourceKey().Kind)
		case events.ReconciliationTriggered:
			for _, k := range v.Keys.Keys() {
				reconcilerOf(k.Kind)
			}
		}
	}
	recs := make([]reconcilers.Reconciler, 0, len(byKind))
	for _, r := range byKind {
		recs = append(recs, r)
	}
	slices.SortFunc(recs, func(a, b reconcilers.Reconciler) int { return cmp.Compare(a.Kind(), b.Kind()) })
	return recs
}

// outcomeReconciler returns, for each key, the outcomes the recording holds
// for it, in order.
type outcomeReconciler struct {
	kind     string
	declared *declaredKeys
	clock    clock.PassiveClock // the coordinator's

	mu       sync.Mutex
	outcomes map[events.Key][]events.Event // not yet returned
}

func (r *outcomeReconciler) Kind() string { return r.kind }

// Reconcile returns key's next recorded outcome, or success once they are
// used up. A failure is reproduced as the recorded coordinator saw it:
//
//   - permanent: a permanent error;
//   - retried: an error with reconcilers.RetryAt, at the recorded distance
//     from the failure. Not a plain error and the replay's own backoff:
//     the recorded delay had its jitter, and a dependency's own retry time
//     (the supervisor's restart backoff) does not count against
//     MaxRetries, which a plain error would, giving up where the recording
//     went on. With the recorded delay, the retry comes at the recorded
//     distance, and what happens meanwhile happens as it did.
//   - given up (retries used up): a plain error. Each earlier failure of
//     the streak was replayed too and counted, so the coordinator gives up
//     here as the recorded one did.
func (r *outcomeReconciler) Reconcile(_ context.Context, req reconcilers.Request) reconcilers.Result {
	r.mu.Lock()
	queue := r.outcomes[req.Key]
	if len(queue) == 0 {
		r.mu.Unlock()
		return reconcilers.Result{}
	}
	next := queue[0]
	r.outcomes[req.Key] = queue[1:]
	r.mu.Unlock()

	switch o := next.(type) {
	case events.ResourceSynced:
		return reconcilers.Result{Deleted: o.Deleted, RequeueAfter: o.RequeueAfter}
	case events.ResourceFailed:
		err := errors.New(o.Error)
		switch {
		case o.Permanent:
			err = reconcilers.Permanent(err)
		case o.WillRetry():
			err = reconcilers.RetryAt(err, r.clock.Now().Add(o.NextRetry.Sub(o.Time)))
		}
		return reconcilers.Result{Err: err}
	}
	return reconcilers.Result{}
}

// List reports the keys of the kind that the inputs fed so far declare.
func (r *outcomeReconciler) List(context.Context) ([]events.Key, error) {
	return r.declared.list(r.kind), nil
}

// declaredKeys tracks which resources the fed inputs declare: created or
// updated, and not deleted since.
type declaredKeys struct {
	mu   sync.Mutex
	keys map[events.Key]bool
}

func newDeclaredKeys() *declaredKeys { return &declaredKeys{keys: map[events.Key]bool{}} }

func (d *declaredKeys) observe(e events.Event) {
	c, ok := e.(events.ResourceChanged)
	if !ok || c.Source == events.SourceManual {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if c.Operation == events.OperationDelete {
		delete(d.keys, c.Key.Canonical())
	} else {
		d.keys[c.Key.Canonical()] = true
	}
}

// list returns kind's declared keys, sorted.
func (d *declaredKeys) list(kind string) []events.Key {
	d.mu.Lock()
	defer d.mu.Unlock()
	var out []events.Key
	for k := range d.keys {
		if k.Kind == kind {
			out = append(out, k)
		}
	}
	slices.SortFunc(out, events.CompareKeys)
	return out
}
