package debouncer

// Tracked reports what d remembers: keys in a refractory period, deadlines
// in its queue (stale ones included), and changes held until their source syncs. All are zero once
// every key has been quiet for an Interval.
func (d *Debouncer) Tracked() (keys, deadlines, held int) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, set := range d.held {
		held += len(set.list)
	}
	return d.handles.Len(), d.deadlines.len(), held
}

// MaxBatchKeys is how many keys that fired at once wait for the mailbox to
// run empty before they are published anyway.
const MaxBatchKeys = maxBatchKeys

// Pause holds the debouncer's lock, so that its handlers and its timer wait
// until resume is called: a test can fill the mailbox while the debouncer is
// busy, as a burst does.
func (d *Debouncer) Pause() (resume func()) {
	d.mu.Lock()
	return d.mu.Unlock
}

// Kept reports the room d's tables keep: handles in its interner's table
// and entries in its deadline queue's ring.
func (d *Debouncer) Kept() (handles, deadlines int) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.handles.Cap(), d.deadlines.ring.Cap()
}

// IdleRelease is how long d stays idle after a burst before it lets the
// burst's tables go.
const IdleRelease = idleRelease
