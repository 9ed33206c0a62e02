// Package ring is a first-in first-out buffer over a circular slice,
// shared by the pipeline's queues of small values: the coordinator's and
// the status store's work queue of handles (pkg/keyqueue) and the
// debouncer's deadlines (pkg/debouncer).
//
// Place: a leaf; it imports nothing of musterd's.
//
// Guarantees:
//
//   - Push, Pop and At cost O(1) and allocate nothing while the buffer has
//     room; a full buffer doubles (to MinCap at least), copying its
//     values once, so a steady stream allocates nothing once grown.
//   - Order is kept across wraps, growth and Retain.
//   - Pop and Retain clear the slots they free, and Reset lets the
//     memory go, so that nothing the values point to is kept alive.
//   - Not safe for concurrent use: its owner locks.
package ring

// MinCap is the capacity of a buffer's first allocation.
const MinCap = 64

// Buffer is a FIFO of values of T. The zero value is an empty buffer.
type Buffer[T any] struct {
	buf        []T
	head, size int
}

// Len returns how many values the buffer holds.
func (r *Buffer[T]) Len() int { return r.size }

// Cap returns how many values the buffer holds before it grows.
func (r *Buffer[T]) Cap() int { return len(r.buf) }

// At returns the i'th value from the front, 0 ≤ i < Len, in place.
func (r *Buffer[T]) At(i int) *T { return &r.buf[(r.head+i)%len(r.buf)] }

// Push appends v at the back.
func (r *Buffer[T]) Push(v T) {
	if r.size == len(r.buf) {
		r.grow()
	}
	r.buf[(r.head+r.size)%len(r.buf)] = v
	r.size++
}

// grow doubles the buffer (MinCap at first), the front moved to index 0.
// Push stays within the inliner's budget with grow inlined (a call would
// cost more there than make and copy do); callers should call Push
// directly from their hot paths, not through a wrapper of their own,
// which would not be inlined.
func (r *Buffer[T]) grow() {
	grown := make([]T, max(MinCap, 2*len(r.buf)))
	n := copy(grown, r.buf[r.head:])
	copy(grown[n:], r.buf[:r.head])
	r.buf, r.head = grown, 0
}

// Pop removes the front value and returns it; the buffer is not empty.
func (r *Buffer[T]) Pop() T {
	var zero T
	v := r.buf[r.head]
	r.buf[r.head] = zero
	r.head = (r.head + 1) % len(r.buf)
	r.size--
	if r.size == 0 {
		r.head = 0
	}
	return v
}

// Retain keeps the values keep says yes to, in order, in a buffer of
// twice their number (MinCap at least): a buffer a burst grew shrinks.
func (r *Buffer[T]) Retain(keep func(T) bool) {
	kept := make([]T, 0, max(MinCap, 2*r.size))
	for i := range r.size {
		if v := *r.At(i); keep(v) {
			kept = append(kept, v)
		}
	}
	r.buf, r.head, r.size = kept[:cap(kept)], 0, len(kept)
}

// Reset empties the buffer and lets its memory go.
func (r *Buffer[T]) Reset() { *r = Buffer[T]{} }
