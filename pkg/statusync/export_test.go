package statusync

// Entries counts the keys the store holds, deleted ones awaiting their
// DeleteStatus included.
func (s *Store) Entries() int {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.handles.Len()
}
