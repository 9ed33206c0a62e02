package coordinator

// TrackedKeys counts the keys the coordinator keeps state for: pending
// work, scheduled retries and requeues, and Failed tombstones.
func (c *Coordinator) TrackedKeys() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.handles.Len()
}
