package debouncer

import (
	"time"

	"github.com/musterd/musterd/internal/ring"
	"github.com/musterd/musterd/pkg/events"
)

// deadlineQueue holds the ends of the keys' refractory periods, earliest
// first. Every period lasts Options.Interval from the instant it starts,
// read from a clock that does not go back, so periods end in the order they
// start: appending keeps the queue sorted, and each key costs O(1) where a
// heap cost O(log n) and an interface conversion per push and pop.
//
// A key whose period restarts (a manual change inside it, or a pending
// change firing at its end) is appended again, with a new sequence number;
// its older entry is stale and is dropped when it reaches the front, or
// when stale entries come to outnumber the keys (compact), so the queue
// stays within a constant factor of the keys in their period. A clock
// stepped back (a test's fake clock can be) breaks the order; push then
// sorts the entry into place, which is what keeps that case correct.
type deadlineQueue struct {
	ring ring.Buffer[deadline]
}

// deadline says the period that h's key started as its seq-th firing ends
// at at. It is live while the key's record still has that seq.
type deadline struct {
	at  time.Time
	seq uint64
	h   events.Handle
}

func (q *deadlineQueue) len() int { return q.ring.Len() }

// push appends d, sorting it into place if the clock went back.
func (q *deadlineQueue) push(d deadline) {
	q.ring.Push(d)
	i := q.ring.Len() - 1
	for ; i > 0 && q.ring.At(i-1).at.After(d.at); i-- {
		*q.ring.At(i) = *q.ring.At(i - 1)
	}
	*q.ring.At(i) = d
}

// front returns the earliest entry; the queue is not empty.
func (q *deadlineQueue) front() deadline { return *q.ring.At(0) }

// pop drops the earliest entry.
func (q *deadlineQueue) pop() { q.ring.Pop() }

// compact drops every entry for which live is false, keeping the order.
func (q *deadlineQueue) compact(live func(deadline) bool) { q.ring.Retain(live) }

// reset empties the queue and lets its memory go.
func (q *deadlineQueue) reset() { q.ring.Reset() }
