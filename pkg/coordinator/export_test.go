package coordinator

// TrackedKeys counts the keys the coordinator keeps state for: pending
// work, scheduled retries and requeues, and Failed tombstones.
func (c *Coordinator) TrackedKeys() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for h := range c.handles.All {
		if !c.recs.At(h).settled() {
			n++
		}
	}
	return n
}

// Records counts the records the coordinator holds: those of TrackedKeys,
// and those of resources that exist as far as their last reconcile knows.
func (c *Coordinator) Records() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.handles.Len()
}
