package keyqueue_test

import (
	"strconv"
	"testing"

	"github.com/musterd/musterd/pkg/events"
	"github.com/musterd/musterd/pkg/keyqueue"
)

// BenchmarkAddGetDone measures one handle's way through the queue (Add,
// Get, Done) in rounds of a burst of handles, on one goroutine: the ring
// and the per-handle state alone, without workers' contention. Steady
// state allocates nothing: the ring grown by the first round is kept.
func BenchmarkAddGetDone(b *testing.B) {
	for _, handles := range []int{1_000, 100_000} {
		b.Run(strconv.Itoa(handles)+"handles", func(b *testing.B) {
			q := keyqueue.New(keyqueue.Config{})
			defer q.ShutDown()
			fill := func() {
				for h := range handles {
					q.Add(events.Handle(h))
				}
			}
			fill() // a first round grows the ring and the state pages
			for range handles {
				h, _ := q.Get()
				q.Done(h)
			}
			for n := 0; b.Loop(); n++ {
				if n%handles == 0 {
					fill()
				}
				h, _ := q.Get()
				q.Done(h)
			}
			// Leave the queue empty for ShutDown.
			for q.Len() > 0 {
				h, _ := q.Get()
				q.Done(h)
			}
		})
	}
}
