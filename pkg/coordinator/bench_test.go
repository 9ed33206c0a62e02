package coordinator_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"k8s.io/client-go/util/workqueue"

	"github.com/musterd/musterd/pkg/bus"
	"github.com/musterd/musterd/pkg/coordinator"
	"github.com/musterd/musterd/pkg/events"
	"github.com/musterd/musterd/pkg/reconcilers"
)

// Both benchmarks push b.N no-op reconciles through two workers in rounds
// of benchKeys distinct keys, waiting for each round to be fully processed
// before the next, so that neither gains from dedup of a key queued twice.
const (
	benchKeys    = 1000
	benchWorkers = 2
)

type noopReconciler struct{}

func (noopReconciler) Kind() string { return "Bench" }
func (noopReconciler) Reconcile(context.Context, reconcilers.Request) reconcilers.Result {
	return reconcilers.Result{}
}
func (noopReconciler) List(context.Context) ([]events.Key, error) { return nil, nil }

func benchKeyList() []events.Key {
	keys := make([]events.Key, benchKeys)
	for i := range keys {
		keys[i] = events.NewKey("Bench", "", fmt.Sprintf("k%04d", i))
	}
	return keys
}

// roundCounter signals when the current round's last key is processed.
type roundCounter struct {
	left atomic.Int64
	done chan struct{}
}

func newRoundCounter() *roundCounter { return &roundCounter{done: make(chan struct{}, 1)} }

func (r *roundCounter) processed() {
	if r.left.Add(-1) == 0 {
		r.done <- struct{}{}
	}
}

// runRounds feeds b.N reconciles to a pipeline and reports their rate.
func runRounds(b *testing.B, counter *roundCounter, feed func([]events.Key)) {
	keys := benchKeyList()
	b.ReportAllocs()
	b.ResetTimer()
	for done := 0; done < b.N; {
		n := min(len(keys), b.N-done)
		counter.left.Store(int64(n))
		feed(keys[:n])
		<-counter.done
		done += n
	}
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "reconciles/s")
}

// BenchmarkCoordinatorNoop measures the whole path: bus trigger →
// coordinator subscription → workqueue → Reconcile → ResourceSynced
// delivered to a subscriber.
func BenchmarkCoordinatorNoop(b *testing.B) {
	for _, mode := range []string{"trigger-per-key", "trigger-per-round"} {
		b.Run(mode, func(b *testing.B) {
			bs := bus.New(bus.Options{Logger: discard})
			defer bs.Close()
			reg, err := reconcilers.NewRegistry(noopReconciler{})
			if err != nil {
				b.Fatal(err)
			}
			c, err := coordinator.New(bs, reg, coordinator.Options{Workers: benchWorkers, ResyncPeriod: -1, Logger: discard})
			if err != nil {
				b.Fatal(err)
			}
			counter := newRoundCounter()
			if _, err := bus.Subscribe(bs, "counter", bus.Lossy(2*benchKeys), func(events.ResourceSynced) { counter.processed() }); err != nil {
				b.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			stopped := make(chan error, 1)
			go func() { stopped <- c.Start(ctx) }()
			<-c.SubscriptionReady()
			bs.Start()

			runRounds(b, counter, func(keys []events.Key) {
				if mode == "trigger-per-round" {
					tks := make([]events.TriggeredKey, len(keys))
					for i, k := range keys {
						tks[i] = events.TriggeredKey{Key: k, CorrelationID: "bench"}
					}
					bus.Publish(bs, events.ReconciliationTriggered{Meta: events.NewMeta("bench"), Reason: events.ReasonChange, Keys: events.NewTriggeredKeys(tks...)})
					return
				}
				for _, k := range keys {
					bus.Publish(bs, events.ReconciliationTriggered{Meta: events.NewMeta("bench"), Reason: events.ReasonChange,
						Keys: events.NewTriggeredKeys(events.TriggeredKey{Key: k, CorrelationID: "bench"})})
				}
			})
			cancel()
			if err := <-stopped; err != nil {
				b.Fatal(err)
			}
			for _, hs := range bs.Stats().Handlers {
				if hs.Dropped != 0 {
					b.Fatalf("%s dropped %d events: the count is wrong", hs.Subscriber, hs.Dropped)
				}
			}
		})
	}
}

// BenchmarkWorkqueueLoop is the baseline: a plain client-go rate-limiting
// workqueue with the same workers and handler, fed directly.
func BenchmarkWorkqueueLoop(b *testing.B) {
	q := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[events.Key]())
	rec := noopReconciler{}
	counter := newRoundCounter()
	var wg sync.WaitGroup
	for range benchWorkers {
		wg.Go(func() {
			for {
				key, shutdown := q.Get()
				if shutdown {
					return
				}
				if res := rec.Reconcile(context.Background(), reconcilers.Request{Key: key, Attempt: 1}); res.Err != nil {
					q.AddRateLimited(key)
				} else {
					q.Forget(key)
				}
				q.Done(key)
				counter.processed()
			}
		})
	}
	runRounds(b, counter, func(keys []events.Key) {
		for _, k := range keys {
			q.Add(k)
		}
	})
	q.ShutDown()
	wg.Wait()
}
