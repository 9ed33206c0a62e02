package bus_test

import (
	"sync"
	"testing"

	evbus "github.com/asaskevich/EventBus"

	"github.com/musterd/musterd/pkg/bus"
	"github.com/musterd/musterd/pkg/events"
)

// The benchmarks compare delivering one event from a publisher to a handler
// on another goroutine through pkg/bus, through a buffered Go channel (the
// floor), and through raw EventBus (whose synchronous handlers run on the
// publisher's goroutine, and whose async ones start a goroutine per event).
//
// Throughput: b.N events, then wait for the handler to have seen them all;
// ns/op is per event. Latency: one event at a time, waiting for the handler
// before publishing the next; ns/op is a full publish-to-handler hop.

var benchEvent = events.ResourceChanged{Key: events.NewKey("Workflow", "default", "bench")}

func BenchmarkThroughput(b *testing.B) {
	b.Run("bus", func(b *testing.B) {
		bs := bus.New(bus.Options{})
		bs.Start()
		defer bs.Close()
		var wg sync.WaitGroup
		_, err := bus.Subscribe(bs, "bench", bus.Lossy(b.N+1), func(events.ResourceChanged) { wg.Done() })
		if err != nil {
			b.Fatal(err)
		}
		wg.Add(b.N)
		b.ReportAllocs()
		b.ResetTimer()
		for range b.N {
			bus.Publish(bs, benchEvent)
		}
		wg.Wait()
	})
	b.Run("chan", func(b *testing.B) {
		ch := make(chan events.Event, 1024)
		done := make(chan struct{})
		go func() {
			for range b.N {
				<-ch
			}
			close(done)
		}()
		b.ReportAllocs()
		b.ResetTimer()
		for range b.N {
			ch <- benchEvent
		}
		<-done
	})
	b.Run("eventbus-sync", func(b *testing.B) {
		eb := evbus.New()
		n := 0
		if err := eb.Subscribe("t", func(events.ResourceChanged) { n++ }); err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		b.ResetTimer()
		for range b.N {
			eb.Publish("t", benchEvent)
		}
	})
	b.Run("eventbus-async", func(b *testing.B) {
		eb := evbus.New()
		if err := eb.SubscribeAsync("t", func(events.ResourceChanged) {}, true); err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		b.ResetTimer()
		for range b.N {
			eb.Publish("t", benchEvent)
		}
		eb.WaitAsync()
	})
}

func BenchmarkLatency(b *testing.B) {
	b.Run("bus", func(b *testing.B) {
		bs := bus.New(bus.Options{})
		bs.Start()
		defer bs.Close()
		ack := make(chan struct{})
		_, err := bus.Subscribe(bs, "bench", bus.Lossy(1), func(events.ResourceChanged) { ack <- struct{}{} })
		if err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		b.ResetTimer()
		for range b.N {
			bus.Publish(bs, benchEvent)
			<-ack
		}
	})
	b.Run("chan", func(b *testing.B) {
		ch := make(chan events.Event, 1)
		ack := make(chan struct{})
		go func() {
			for range ch {
				ack <- struct{}{}
			}
		}()
		defer close(ch)
		b.ReportAllocs()
		b.ResetTimer()
		for range b.N {
			ch <- benchEvent
			<-ack
		}
	})
	b.Run("eventbus-async", func(b *testing.B) {
		eb := evbus.New()
		ack := make(chan struct{})
		if err := eb.SubscribeAsync("t", func(events.ResourceChanged) { ack <- struct{}{} }, true); err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		b.ResetTimer()
		for range b.N {
			eb.Publish("t", benchEvent)
			<-ack
		}
	})
}

// BenchmarkCoalescingFanOut publishes state events for 1,000 keys to three
// coalescing subscribers, as the pipeline's stages subscribe.
func BenchmarkCoalescingFanOut(b *testing.B) {
	bs := bus.New(bus.Options{})
	bs.Start()
	defer bs.Close()
	for _, name := range []string{"a", "b", "c"} {
		if _, err := bus.Subscribe(bs, name, bus.Coalescing(bus.ByResourceKey), func(events.ResourceChanged) {}); err != nil {
			b.Fatal(err)
		}
	}
	evs := make([]events.ResourceChanged, 1000)
	for i := range evs {
		evs[i] = events.ResourceChanged{Key: events.NewKey("Workflow", "", string(rune('a'+i%26))+string(rune('a'+i/26)))}
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		bus.Publish(bs, evs[i%len(evs)])
	}
}
