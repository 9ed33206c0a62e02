package debouncer

import (
	"context"
	"log/slog"
	"strconv"
	"testing"
	"time"

	"github.com/musterd/musterd/pkg/bus"
	"github.com/musterd/musterd/pkg/events"
)

// BenchmarkDebouncer measures changes handled per second spread over many
// keys. It calls the handler directly, past the bus's mailbox, so that it
// measures the debouncer alone: key lookups, the deadline heap, batching,
// the timer loop firing refractory ends, and publishing triggers. With a 1ms
// interval keys keep entering and leaving their refractory periods.
func BenchmarkDebouncer(b *testing.B) {
	for _, keys := range []int{1_000, 100_000} {
		b.Run(strconv.Itoa(keys)+"keys", func(b *testing.B) {
			bs := bus.New(bus.Options{})
			defer bs.Close()
			d, err := New(bs, Options{Interval: time.Millisecond, Logger: slog.New(slog.DiscardHandler)})
			if err != nil {
				b.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() { done <- d.Start(ctx) }()
			<-d.SubscriptionReady()
			bs.Start()
			defer func() {
				cancel()
				if err := <-done; err != nil {
					b.Error(err)
				}
			}()
			d.onIndexSynchronized(events.IndexSynchronized{Source: events.SourceFilesystem})

			changes := make([]events.ResourceChanged, keys)
			for i := range changes {
				changes[i] = events.ResourceChanged{Meta: events.NewMeta(""), Key: events.NewKey("MCPServer", "", "k"+strconv.Itoa(i)),
					Operation: events.OperationUpdate, Source: events.SourceFilesystem}
			}
			for i := 0; b.Loop(); i++ {
				d.onResourceChanged(changes[i%keys])
			}
			d.onIdle()
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "changes/s")
		})
	}
}
