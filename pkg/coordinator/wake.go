package coordinator

import (
	"container/heap"
	"slices"
	"time"

	"github.com/musterd/musterd/pkg/events"
)

// wakeEntry is a delayed reconcile: key is due at at. seq is the key's
// wakeSeq when it was delayed; an entry whose key has been delayed again,
// or triggered, or forgotten since is stale and dropped when it surfaces.
type wakeEntry struct {
	at  time.Time
	seq uint64
	key events.Key
}

// wakeHeap orders delayed reconciles by when they are due, then by the
// order they were delayed in, for container/heap: wakeLoop takes only the
// due ones, instead of scanning every key each time the timer fires.
type wakeHeap []wakeEntry

func (h wakeHeap) Len() int { return len(h) }
func (h wakeHeap) Less(i, j int) bool {
	if c := h[i].at.Compare(h[j].at); c != 0 {
		return c < 0
	}
	return h[i].seq < h[j].seq
}
func (h wakeHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *wakeHeap) Push(x any)   { *h = append(*h, x.(wakeEntry)) }
func (h *wakeHeap) Pop() any {
	old := *h
	e := old[len(old)-1]
	*h = old[:len(old)-1]
	return e
}

// live reports whether e still stands for its key's pending delay; c.mu is
// held.
func (c *Coordinator) live(e wakeEntry) bool {
	st := c.keys[e.key]
	return st != nil && st.wakeSeq == e.seq && st.wakeAt.Equal(e.at)
}

// pushWakeLocked records key's delay until at; c.mu is held. Stale entries
// are dropped once they outnumber the keys, so re-delays cannot grow the
// heap without bound.
func (c *Coordinator) pushWakeLocked(key events.Key, at time.Time, seq uint64) {
	heap.Push(&c.wakes, wakeEntry{at: at, seq: seq, key: key})
	if len(c.wakes) > 2*len(c.keys)+64 {
		c.wakes = slices.DeleteFunc(c.wakes, func(e wakeEntry) bool { return !c.live(e) })
		heap.Init(&c.wakes)
	}
}

// takeDueLocked pops the live entries due at now, in due order, and
// returns their keys and when the next live one is due (zero if none);
// c.mu is held.
func (c *Coordinator) takeDueLocked(now time.Time) (due []events.Key, next time.Time) {
	for len(c.wakes) > 0 {
		top := c.wakes[0]
		if !c.live(top) {
			heap.Pop(&c.wakes)
			continue
		}
		if top.at.After(now) {
			return due, top.at
		}
		heap.Pop(&c.wakes)
		due = append(due, top.key)
	}
	return due, time.Time{}
}
