package statusync

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/musterd/musterd/pkg/bus"
	"github.com/musterd/musterd/pkg/events"
)

// Readiness reports when the first full reconcile is done: a watcher has
// listed everything (the index-synced trigger) and every resource of that
// listing has had its first outcome, Synced or Failed, or has been deleted
// since. From then on it stays ready. Make it with NewReadiness; it works
// once Start runs.
//
// A delete counts because an outcome may never come for it: a replica that
// follows in leader election lists every resource, but reconciles none, so
// a resource deleted before it is elected is gone from the full reconcile
// it runs then, and nothing runs for it here to stop.
type Readiness struct {
	bus      *bus.Bus
	attached bus.Attachment
	starts   atomic.Bool
	ready    atomic.Bool
	done     chan struct{} // closed once ready

	mu      sync.Mutex
	synced  bool                    // an index-synced trigger arrived
	waiting map[events.Key]struct{} // its keys still without an outcome
}

// NewReadiness returns a readiness tracker of b.
func NewReadiness(b *bus.Bus) *Readiness {
	return &Readiness{bus: b, waiting: map[events.Key]struct{}{}, done: make(chan struct{})}
}

// Name is the component's name.
func (r *Readiness) Name() string { return "readiness" }

// SubscriptionReady is closed once Start has subscribed.
func (r *Readiness) SubscriptionReady() <-chan struct{} { return r.attached.SubscriptionReady() }

// BusySince reports since when its handler has been running, if it is.
func (r *Readiness) BusySince() (time.Time, bool) { return r.attached.BusySince() }

// Ready reports whether the first full reconcile is done.
func (r *Readiness) Ready() bool { return r.ready.Load() }

// Done is closed once Ready reports true.
func (r *Readiness) Done() <-chan struct{} { return r.done }

// Start subscribes and follows outcomes until ctx is done.
func (r *Readiness) Start(ctx context.Context) error {
	if !r.starts.CompareAndSwap(false, true) {
		return errors.New("readiness: started twice")
	}
	sub, err := r.bus.Subscribe(bus.SubscriberOptions{
		Name: r.Name(),
		// Coalescing per type and key keeps every key's outcome and every
		// trigger reason apart, in publish order.
		Delivery: bus.Coalescing(func(e events.Event) bus.CoalesceKey {
			if t, ok := e.(events.ReconciliationTriggered); ok {
				return bus.CoalesceKey{Type: t.EventType(), Tag: string(t.Reason) + "\x00" + t.CorrelationID}
			}
			return bus.ByTypeAndResourceKey(e)
		}),
		Handlers: []bus.Handler{
			bus.On(r.onTriggered),
			bus.On(func(e events.ResourceChanged) {
				if e.Operation == events.OperationDelete {
					r.outcome(e.Key)
				}
			}),
			bus.On(func(e events.ResourceSynced) { r.outcome(e.Key) }),
			bus.On(func(e events.ResourceFailed) { r.outcome(e.Key) }),
		},
	})
	if err != nil {
		return err
	}
	r.attached.Attach(sub)
	<-ctx.Done()
	sub.Unsubscribe()
	return nil
}

func (r *Readiness) onTriggered(e events.ReconciliationTriggered) {
	if e.Reason != events.ReasonIndexSynced || r.ready.Load() {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.synced = true
	for tk := range e.Keys.All() {
		r.waiting[tk.Key] = struct{}{}
	}
	r.check()
}

func (r *Readiness) outcome(key events.Key) {
	if r.ready.Load() {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.waiting, key.Canonical())
	r.check()
}

// check turns ready once the trigger arrived and no key waits. r.mu is
// held; once ready, it does nothing (done is closed once).
func (r *Readiness) check() {
	if r.synced && len(r.waiting) == 0 && !r.ready.Load() {
		r.ready.Store(true)
		r.waiting = nil
		close(r.done)
	}
}
