package debouncer

import (
	"time"

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
	ring       []deadline
	head, size int
}

// deadline says the period that h's key started as its seq-th firing ends
// at at. It is live while the key's record still has that seq.
type deadline struct {
	at  time.Time
	seq uint64
	h   events.Handle
}

func (q *deadlineQueue) len() int { return q.size }

// at returns the i'th entry from the front.
func (q *deadlineQueue) at(i int) *deadline { return &q.ring[(q.head+i)%len(q.ring)] }

// push appends d, sorting it into place if the clock went back.
func (q *deadlineQueue) push(d deadline) {
	if q.size == len(q.ring) {
		grown := make([]deadline, max(64, 2*len(q.ring)))
		n := copy(grown, q.ring[q.head:])
		copy(grown[n:], q.ring[:q.head])
		q.ring, q.head = grown, 0
	}
	i := q.size
	q.size++
	for ; i > 0 && q.at(i-1).at.After(d.at); i-- {
		*q.at(i) = *q.at(i - 1)
	}
	*q.at(i) = d
}

// front returns the earliest entry; the queue is not empty.
func (q *deadlineQueue) front() deadline { return q.ring[q.head] }

// pop drops the earliest entry.
func (q *deadlineQueue) pop() {
	q.ring[q.head] = deadline{}
	q.head = (q.head + 1) % len(q.ring)
	q.size--
	if q.size == 0 {
		q.head = 0
	}
}

// compact drops every entry for which live is false, keeping the order.
func (q *deadlineQueue) compact(live func(deadline) bool) {
	kept := make([]deadline, 0, max(64, 2*q.size))
	for i := range q.size {
		if d := *q.at(i); live(d) {
			kept = append(kept, d)
		}
	}
	q.ring, q.head, q.size = kept[:cap(kept)], 0, len(kept)
}

// reset empties the queue and lets its memory go.
func (q *deadlineQueue) reset() { *q = deadlineQueue{} }
