package keyqueue_test

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/client-go/util/workqueue"

	"github.com/musterd/musterd/pkg/events"
	"github.com/musterd/musterd/pkg/keyqueue"
)

// The queue against client-go's, as a model: the same random sequence of
// Add, Get, Done and ShutDown, on one goroutine, drives both, and every
// call must answer the same (what Get hands out, whether it reports
// shutdown, Len after each call). A Get is made only when one would not
// block (something queued, or shut down). The one case in which the two
// differ on purpose, a Done of a handle queued but not being processed
// (doc.go), is not made here; TestDoneOfAQueuedHandleNotBeingProcessed
// pins it. Handles are drawn from a few, so that every state meets every
// call; after the sequence both are shut down and drained, and what each
// hands out must be the same, with no handle twice.
func TestQueueAnswersAsClientGosWorkqueue(t *testing.T) {
	skipped := 0
	for seed := range uint64(500) {
		rng := rand.New(rand.NewPCG(seed, 0x6b657971))
		skipped += runModel(t, fmt.Sprint("seed ", seed), rng.IntN)
	}
	// The skipped case came up, so the classification below is exercised.
	assert.Positive(t, skipped, "Done of a queued handle not being processed")
}

// FuzzQueueAnswersAsClientGosWorkqueue drives the model test with the
// choices the fuzzer's bytes make, one byte a choice: the fuzzer searches
// the sequences of calls for one on which the two queues answer
// differently.
func FuzzQueueAnswersAsClientGosWorkqueue(f *testing.F) {
	f.Add([]byte{3, 60, 0, 0, 1, 0, 2, 100, 1, 150, 1, 0, 1, 100, 2, 150, 1, 199, 0})
	f.Add([]byte{7, 80, 0, 1, 2, 0, 3, 0, 4, 100, 0, 140, 1, 0, 1, 160, 1, 100, 0, 0})
	f.Fuzz(func(t *testing.T, choices []byte) {
		i := 0
		choose := func(n int) int {
			if i >= len(choices) {
				return 0
			}
			c := int(choices[i])
			i++
			return c % n
		}
		runModel(t, fmt.Sprintf("choices %v", choices), choose)
	})
}

// runModel runs one sequence of calls, its every choice made by
// choose(n), which returns a number in [0, n); label names the sequence
// in a failure.
func runModel(t *testing.T, label string, choose func(n int) int) (skipped int) {
	q := keyqueue.New(keyqueue.Config{})
	model := workqueue.NewTyped[events.Handle]()
	defer q.ShutDown()
	defer model.ShutDown()

	handles := 1 + choose(8)
	// What the test knows of each handle, only to tell the case that the
	// two queues answer differently: queued, taken and not yet done, and
	// added again while taken.
	queued := map[events.Handle]bool{}
	processing := map[events.Handle]bool{}
	dirty := map[events.Handle]bool{}
	shutdown := false
	var trace []string
	fail := func(format string, args ...any) {
		t.Helper()
		t.Fatalf("%s after %v: "+format, append([]any{label, trace}, args...)...)
	}
	steps := 20 + choose(200)
	for range steps {
		h := events.Handle(choose(handles))
		switch op := choose(20); {
		case op < 8:
			trace = append(trace, fmt.Sprint("Add ", h))
			q.Add(h)
			model.Add(h)
			switch {
			case shutdown || queued[h] || dirty[h]:
			case processing[h]:
				dirty[h] = true
			default:
				queued[h] = true
			}
		case op < 13:
			if model.Len() == 0 && !shutdown {
				continue // Get would block
			}
			trace = append(trace, "Get")
			got, gotDown := q.Get()
			want, wantDown := model.Get()
			if got != want || gotDown != wantDown {
				fail("Get = %d, %v; client-go's %d, %v", got, gotDown, want, wantDown)
			}
			if !gotDown {
				if !queued[got] {
					fail("Get handed out %d, which was not queued", got)
				}
				delete(queued, got)
				processing[got] = true
			}
		case op < 19:
			if queued[h] && !processing[h] {
				skipped++ // the known difference: TestDoneOfAQueuedHandleNotBeingProcessed
				continue
			}
			trace = append(trace, fmt.Sprint("Done ", h))
			q.Done(h)
			model.Done(h)
			if processing[h] {
				delete(processing, h)
				if dirty[h] { // added while processed: queued again
					delete(dirty, h)
					queued[h] = true
				}
			}
		default:
			trace = append(trace, "ShutDown")
			q.ShutDown()
			model.ShutDown()
			shutdown = true
		}
		if q.Len() != model.Len() {
			fail("Len = %d; client-go's %d", q.Len(), model.Len())
		}
		if q.Len() != len(queued) {
			fail("Len = %d; queued are %v", q.Len(), queued)
		}
	}

	// Drain both: the same handles in the same order, none twice.
	q.ShutDown()
	model.ShutDown()
	seen := map[events.Handle]bool{}
	for {
		got, gotDown := q.Get()
		want, wantDown := model.Get()
		if got != want || gotDown != wantDown {
			fail("draining: Get = %d, %v; client-go's %d, %v", got, gotDown, want, wantDown)
		}
		if gotDown {
			break
		}
		if seen[got] {
			fail("draining: %d queued twice", got)
		}
		seen[got] = true
	}
	return skipped
}

// Done of a handle that is queued but not being processed (a caller's
// bug: Done belongs to Get) does nothing here: the handle stays queued
// once, in its place. client-go's queue pushes it again, so that it is
// queued twice and handed out twice, the second time while the first is
// maybe still being processed; this test pins both, so that a change of
// either is seen.
func TestDoneOfAQueuedHandleNotBeingProcessed(t *testing.T) {
	q := keyqueue.New(keyqueue.Config{})
	defer q.ShutDown()
	q.Add(1)
	q.Add(2)
	q.Done(1)
	assert.Equal(t, 2, q.Len())
	q.ShutDown()
	var got []events.Handle
	for h, down := q.Get(); !down; h, down = q.Get() {
		got = append(got, h)
	}
	assert.Equal(t, []events.Handle{1, 2}, got)

	model := workqueue.NewTyped[events.Handle]()
	model.Add(1)
	model.Add(2)
	model.Done(1)
	require.Equal(t, 3, model.Len(), "client-go queues the handle a second time")
	model.ShutDown()
	got = nil
	for h, down := model.Get(); !down; h, down = model.Get() {
		got = append(got, h)
	}
	assert.Equal(t, []events.Handle{1, 2, 1}, got)
}
