package pipeline_test

import (
	"context"
	"fmt"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/musterd/musterd/pkg/bus"
	"github.com/musterd/musterd/pkg/events"
	"github.com/musterd/musterd/pkg/pipeline"
	"github.com/musterd/musterd/pkg/reconcilers"
)

// noop is a reconciler that only counts, and says when it reached a target.
type noop struct {
	n      atomic.Int64
	target int64
	done   chan struct{}
}

func (r *noop) Kind() string                               { return kind }
func (r *noop) List(context.Context) ([]events.Key, error) { return nil, nil }
func (r *noop) Reconcile(context.Context, reconcilers.Request) reconcilers.Result {
	if r.n.Add(1) == r.target {
		close(r.done)
	}
	return reconcilers.Result{}
}

// BenchmarkPipelineNoop measures no-op reconciles per second through the
// whole pipeline: a change published on the bus, the debouncer, the
// coordinator's workqueue and workers, the status store and the metrics
// subscriber. Each op is a change of a distinct key. Compare with
// pkg/coordinator's BenchmarkWorkqueueLoop, a bare client-go workqueue
// loop running the same handler with the same workers.
func BenchmarkPipelineNoop(b *testing.B) {
	rec := &noop{target: int64(b.N), done: make(chan struct{})}
	p, err := pipeline.New(pipeline.Options{Logger: slog.New(slog.DiscardHandler), Reconcilers: []reconcilers.Reconciler{rec}})
	if err != nil {
		b.Fatal(err)
	}
	changes := make([]events.ResourceChanged, b.N)
	for i := range changes {
		changes[i] = events.ResourceChanged{Meta: events.NewMeta(""), Key: events.NewKey(kind, "", fmt.Sprint("w", i)),
			Operation: events.OperationCreate, Source: events.SourceManual}
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	for !p.Components.Ready() {
		select {
		case err := <-done:
			b.Fatal(err)
		default:
		}
		time.Sleep(time.Millisecond) // before the timer starts: not measured
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := range changes {
		bus.Publish(p.Bus, changes[i])
	}
	<-rec.done
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "reconciles/s")
	cancel()
	if err := <-done; err != nil {
		b.Fatal(err)
	}
}
