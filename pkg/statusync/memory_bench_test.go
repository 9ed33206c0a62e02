package statusync_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"runtime"
	"testing"
	"time"

	"github.com/musterd/musterd/internal/memtest"
	"github.com/musterd/musterd/pkg/bus"
	"github.com/musterd/musterd/pkg/events"
	"github.com/musterd/musterd/pkg/statusync"
)

// BenchmarkStoreRetainedHeap measures the heap a memory-only store keeps at
// rest for each resource, once every one of 100,000 distinct keys has had
// its outcome (all synced, or all failed and waiting for a retry) and its
// write is done. The events stay alive throughout, so their
// keys, correlation IDs, hashes and errors, which the daemon's other stages
// hold as well, are not counted: the figure is the store's own.
func BenchmarkStoreRetainedHeap(b *testing.B) {
	const resources = 100_000
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	synced := make([]events.Event, resources)
	failed := make([]events.Event, resources)
	for i := range synced {
		meta := events.Meta{Time: at.Add(time.Duration(i) * time.Millisecond), CorrelationID: fmt.Sprintf("c-%08d", i)}
		key := events.NewKey("MCPServer", "team", fmt.Sprintf("server-%06d", i))
		synced[i] = events.ResourceSynced{Meta: meta, Key: key, Attempt: 1, Hash: fmt.Sprintf("%016x", i)}
		failed[i] = events.ResourceFailed{Meta: meta, Key: key, Attempt: 2, Error: "connection refused",
			NextRetry: meta.Time.Add(time.Minute)}
	}
	for _, run := range []struct {
		name    string
		outcome []events.Event
	}{{"synced", synced}, {"failed", failed}} {
		b.Run(run.name, func(b *testing.B) {
			var perResource float64
			for b.Loop() {
				perResource = storeHeapPerResource(b, run.outcome)
			}
			b.ReportMetric(perResource, "B/resource")
		})
	}
}

// storeHeapPerResource runs a store, feeds it outcome, an event per key, and
// returns the heap it then retains, per key.
func storeHeapPerResource(b *testing.B, outcome []events.Event) float64 {
	before := memtest.LiveHeap()
	bu := bus.New(bus.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	store := statusync.NewStore(bu, statusync.StoreOptions{Logger: slog.New(slog.DiscardHandler)})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- store.Start(ctx) }()
	<-store.SubscriptionReady()
	bu.Start()
	for i, e := range outcome {
		bu.Publish(e)
		if i%1000 == 999 { // paced, so that what the bus's mailbox keeps of a burst is not counted
			waitIdle(bu)
		}
	}
	for store.Entries() < len(outcome) || !bu.Idle() {
		time.Sleep(time.Millisecond)
	}
	for quiet, _ := store.Quiescent(time.Now()); !quiet; quiet, _ = store.Quiescent(time.Now()) {
		time.Sleep(time.Millisecond)
	}
	after := memtest.LiveHeap()
	if _, ok := store.Get(outcome[len(outcome)-1].(events.Keyed).ResourceKey()); !ok {
		b.Fatal("the last key has no status")
	}
	cancel()
	if err := <-done; err != nil {
		b.Fatal(err)
	}
	bu.Close()
	runtime.KeepAlive(outcome)
	return float64(after-before) / float64(len(outcome))
}

func waitIdle(bu *bus.Bus) {
	for !bu.Idle() {
		time.Sleep(100 * time.Microsecond)
	}
}
