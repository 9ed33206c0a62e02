package coordinator

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// reconcileContext is the context of one Reconcile: it ends at its
// deadline (with the given cause), when the coordinator's context ends, or
// when the reconcile returns (end), whichever comes first, exactly as
// context.WithDeadlineCause's would.
//
// What it saves is the cost of that context for the reconciles that never
// look at theirs: the timer, the link into the parent and three
// allocations were a tenth of a no-op reconcile's CPU. It builds the real
// context the first time it is asked anything but its deadline (Done, Err,
// Value, and so context.Cause and every context derived from it), with the
// deadline fixed when the reconcile began; from then on it answers as that
// context does. A reconcile that never asks cannot tell the difference,
// and it could not have been cut short by a context it never read.
type reconcileContext struct {
	parent   context.Context
	deadline time.Time
	cause    error

	built atomic.Pointer[builtContext] // the real context, once asked
	mu    sync.Mutex                   // builds it once
	ended bool                         // end was called; under mu
}

type builtContext struct {
	ctx    context.Context
	cancel context.CancelFunc
}

func newReconcileContext(parent context.Context, deadline time.Time, cause error) *reconcileContext {
	return &reconcileContext{parent: parent, deadline: deadline, cause: cause}
}

// Deadline is the earlier of the reconcile's deadline and the parent's,
// as context.WithDeadline reports it.
func (c *reconcileContext) Deadline() (time.Time, bool) {
	if d, ok := c.parent.Deadline(); ok && d.Before(c.deadline) {
		return d, true
	}
	return c.deadline, true
}

func (c *reconcileContext) Done() <-chan struct{} { return c.real().Done() }
func (c *reconcileContext) Err() error            { return c.real().Err() }
func (c *reconcileContext) Value(key any) any     { return c.real().Value(key) }

func (c *reconcileContext) String() string { return "coordinator.reconcileContext" }

// real returns the real context, building it the first time.
func (c *reconcileContext) real() context.Context {
	if b := c.built.Load(); b != nil {
		return b.ctx
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if b := c.built.Load(); b != nil {
		return b.ctx
	}
	ctx, cancel := context.WithDeadlineCause(c.parent, c.deadline, c.cause)
	if c.ended {
		cancel() // asked after the reconcile returned: ended, as it would be
	}
	c.built.Store(&builtContext{ctx: ctx, cancel: cancel})
	return ctx
}

// end ends the context: the reconcile returned.
func (c *reconcileContext) end() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.ended = true
	if b := c.built.Load(); b != nil {
		b.cancel()
	}
}
