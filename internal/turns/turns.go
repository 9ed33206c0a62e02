// Package turns serialises work per key: one holder of a key's turn at a
// time, others waiting in no particular order, a wait ended by its
// context. A key's bookkeeping lives only while its turn is held or
// awaited. It is a leaf, for the stages that must not interleave the work
// of one key (a resource's subscribe and unsubscribe, each with its
// server call) while other keys' goes on.
package turns

import (
	"context"
	"sync"
)

// Keyed holds the turns of keys of type K. The zero value is ready.
type Keyed[K comparable] struct {
	mu    sync.Mutex
	turns map[K]*turn
}

type turn struct {
	token chan struct{} // holds a value while the turn is taken
	users int           // holders and waiters, under Keyed.mu; at 0 the turn is dropped
}

// Take waits for k's turn, or for ctx to end (its cause is the error), and
// returns the func that gives the turn back.
func (t *Keyed[K]) Take(ctx context.Context, k K) (giveBack func(), err error) {
	t.mu.Lock()
	if t.turns == nil {
		t.turns = map[K]*turn{}
	}
	tn := t.turns[k]
	if tn == nil {
		tn = &turn{token: make(chan struct{}, 1)}
		t.turns[k] = tn
	}
	tn.users++
	t.mu.Unlock()
	leave := func() {
		t.mu.Lock()
		defer t.mu.Unlock()
		if tn.users--; tn.users == 0 {
			delete(t.turns, k)
		}
	}
	select {
	case tn.token <- struct{}{}:
		return func() { <-tn.token; leave() }, nil
	case <-ctx.Done():
		leave()
		return nil, context.Cause(ctx)
	}
}

// Len returns the number of keys whose turn is held or awaited.
func (t *Keyed[K]) Len() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.turns)
}
