package registry

import (
	"slices"
	"sync"
)

// Funcs is a set of registered funcs of type F. The zero value is empty
// and ready to use.
type Funcs[F any] struct {
	mu      sync.Mutex
	entries []entry[F] // in registration order
	next    uint64
}

type entry[F any] struct {
	id uint64
	fn F
}

// Add registers fn; the returned func ends the registration.
func (r *Funcs[F]) Add(fn F) (cancel func()) {
	r.mu.Lock()
	defer r.mu.Unlock()
	id := r.next
	r.next++
	r.entries = append(r.entries, entry[F]{id: id, fn: fn})
	return func() {
		r.mu.Lock()
		defer r.mu.Unlock()
		r.entries = slices.DeleteFunc(r.entries, func(e entry[F]) bool { return e.id == id })
	}
}

// All returns the registered funcs, in the order they registered.
func (r *Funcs[F]) All() []F {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]F, len(r.entries))
	for i, e := range r.entries {
		out[i] = e.fn
	}
	return out
}
