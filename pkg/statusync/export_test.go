package statusync

import "github.com/musterd/musterd/pkg/events"

// Entries counts the keys the store holds, deleted ones awaiting their
// DeleteStatus included.
func (s *Store) Entries() int {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.handles.Len()
}

// Record records e as if it came from the bus.
func (h *History) Record(e events.Event) { h.record(e) }

// ExactTimes counts the keys whose times the store keeps as time.Time.
func (s *Store) ExactTimes() int {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return len(s.exact)
}
