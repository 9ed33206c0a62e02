package supervisor

import "sync"

// watchers is a set of registered funcs, told in no particular order: the
// WatchLists and WatchResourceUpdates registrations. The funcs run
// outside the lock, so one may cancel its own registration.
type watchers[F any] struct {
	mu   sync.Mutex
	fns  map[int]F
	next int
}

// add registers fn; the returned func ends the registration.
func (w *watchers[F]) add(fn F) (cancel func()) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.fns == nil {
		w.fns = map[int]F{}
	}
	id := w.next
	w.next++
	w.fns[id] = fn
	return func() {
		w.mu.Lock()
		defer w.mu.Unlock()
		delete(w.fns, id)
	}
}

// each calls tell with every registered func.
func (w *watchers[F]) each(tell func(F)) {
	w.mu.Lock()
	fns := make([]F, 0, len(w.fns))
	for _, fn := range w.fns {
		fns = append(fns, fn)
	}
	w.mu.Unlock()
	for _, fn := range fns {
		tell(fn)
	}
}
