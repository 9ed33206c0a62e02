package keyqueue

// RingCap is how many handles q's ring holds before it grows.
func RingCap(q *Queue) int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.ring.Cap()
}
