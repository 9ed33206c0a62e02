package eventtrace_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/musterd/musterd/pkg/bus"
	"github.com/musterd/musterd/pkg/events"
	"github.com/musterd/musterd/pkg/eventtrace"
)

// gatedWriter blocks every Write until its gate opens.
type gatedWriter struct {
	gate chan struct{}
	mu   sync.Mutex
	buf  bytes.Buffer
}

func (w *gatedWriter) Write(p []byte) (int, error) {
	<-w.gate
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.Write(p)
}

// runRecorder starts rec and returns a function that stops it and returns
// Start's error.
func runRecorder(t *testing.T, rec *eventtrace.Recorder) (stop func() error) {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	result := make(chan error, 1)
	go func() { result <- rec.Start(ctx) }()
	<-rec.SubscriptionReady()
	return func() error {
		cancel()
		return <-result
	}
}

func TestRecorderWritesEveryEventWithItsOffsetThroughABlockedWriter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const n = 10_000
		b := bus.New(bus.Options{})
		defer b.Close()
		out := &gatedWriter{gate: make(chan struct{})}
		h := header()
		h.Start = events.Now()
		rec := eventtrace.NewRecorder(b, out, h, eventtrace.RecorderOptions{})
		stop := runRecorder(t, rec)

		// Published before the barrier is released: held, then recorded.
		held := events.BecameLeader{Meta: events.Meta{Time: h.Start.Add(-time.Second), CorrelationID: "early"}, Identity: "me"}
		b.Publish(held)
		b.Start()
		synctest.Wait() // the first flush blocks on the writer
		busy, ok := rec.BusySince()
		assert.True(t, ok, "a blocked write shows as busy")
		assert.Equal(t, h.Start, busy.Round(0).UTC())

		var want []eventtrace.Entry
		want = append(want, eventtrace.Entry{At: 0, Event: held}) // stamped before the start: offset 0
		samples := catalogue(h.Start, "")
		for i := range n {
			e := samples[i%len(samples)]
			at := time.Duration(i) * time.Millisecond
			if i%100 == 99 {
				at -= 50 * time.Millisecond // stamped before the event published ahead of it
			}
			e = restamp(e, events.Meta{Time: h.Start.Add(at), CorrelationID: string(rune('a' + i%26))})
			b.Publish(e)
			want = append(want, eventtrace.Entry{At: max(at, want[len(want)-1].At), Event: e})
		}
		pending := 0
		for _, hs := range b.Stats().Handlers {
			pending = hs.Pending
		}
		assert.Equal(t, n, pending, "every event waits in the recorder's mailbox, none dropped")

		// Stopped while still blocked: it drains what was published before.
		stopped := make(chan error, 1)
		go func() { stopped <- stop() }()
		synctest.Wait() // Start has drained the subscription and waits for it
		b.Publish(events.BecameLeader{Meta: events.Meta{Time: h.Start.Add(time.Hour), CorrelationID: "after stop"}})
		synctest.Wait()
		close(out.gate)
		require.NoError(t, <-stopped)
		assert.Empty(t, b.Stats().Handlers, "unsubscribed")

		got, err := eventtrace.Read(&out.buf)
		require.NoError(t, err)
		assert.Equal(t, h.Start, got.Header.Start)
		assert.Equal(t, h.Config, got.Header.Config)
		require.Equal(t, len(want), len(got.Entries))
		for i := range want {
			if !assert.Equal(t, want[i], got.Entries[i], "entry %d", i) {
				break
			}
		}
	})
}

// restamp returns e with meta.
func restamp(e events.Event, meta events.Meta) events.Event {
	switch e := e.(type) {
	case events.ResourceChanged:
		e.Meta = meta
		return e
	case events.IndexSynchronized:
		e.Meta = meta
		return e
	case events.ReconciliationTriggered:
		e.Meta = meta
		return e
	case events.ReconciliationStarted:
		e.Meta = meta
		return e
	case events.ResourceSynced:
		e.Meta = meta
		return e
	case events.ResourceFailed:
		e.Meta = meta
		return e
	case events.StatusSynced:
		e.Meta = meta
		return e
	case events.StatusSyncFailed:
		e.Meta = meta
		return e
	case events.ServiceStateChanged:
		e.Meta = meta
		return e
	case events.BecameLeader:
		e.Meta = meta
		return e
	case events.LostLeadership:
		e.Meta = meta
		return e
	case events.WorkflowExecutionStarted:
		e.Meta = meta
		return e
	case events.WorkflowExecutionFinished:
		e.Meta = meta
		return e
	case events.WorkflowStepStarted:
		e.Meta = meta
		return e
	case events.WorkflowStepFinished:
		e.Meta = meta
		return e
	case events.DefinitionValidated:
		e.Meta = meta
		return e
	case events.ToolCallsCounted:
		e.Meta = meta
		return e
	}
	panic("restamp: unknown event type " + e.EventType())
}

// failingWriter fails every write after the first ok bytes.
type failingWriter struct{ ok int }

func (w *failingWriter) Write(p []byte) (int, error) {
	if w.ok >= len(p) {
		w.ok -= len(p)
		return len(p), nil
	}
	return 0, errors.New("no space left on device")
}

func TestRecorderStopsAtTheFirstWriteErrorLoggingItOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := bus.New(bus.Options{})
		defer b.Close()
		b.Start()
		var log bytes.Buffer
		rec := eventtrace.NewRecorder(b, &failingWriter{}, header(), eventtrace.RecorderOptions{Logger: slog.New(slog.NewTextHandler(&log, nil))})
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		result := make(chan error, 1)
		go func() { result <- rec.Start(ctx) }()
		<-rec.SubscriptionReady()
		for i := range 3 {
			b.Publish(events.BecameLeader{Meta: events.Meta{Time: start.Add(time.Duration(i)), CorrelationID: "c"}})
		}
		err := <-result // returns without ctx being cancelled
		assert.EqualError(t, err, "trace: write: no space left on device")
		assert.Equal(t, 1, strings.Count(log.String(), "level=ERROR"), log.String())
		assert.Contains(t, log.String(), "recording stopped, reconciliation goes on")
		assert.Empty(t, b.Stats().Handlers, "a failed recorder no longer holds events")
	})
}

func TestRecorderEndsWhenTheBusCloses(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := bus.New(bus.Options{})
		b.Start()
		var out bytes.Buffer
		rec := eventtrace.NewRecorder(b, &out, eventtrace.Header{}, eventtrace.RecorderOptions{})
		result := make(chan error, 1)
		go func() { result <- rec.Start(t.Context()) }()
		<-rec.SubscriptionReady()
		b.Close()
		require.NoError(t, <-result)
		got, err := eventtrace.Read(&out)
		require.NoError(t, err)
		assert.Equal(t, events.Now(), got.Header.Start, "a zero start is the time Start was called")
	})
}

// BenchmarkRecorder measures events published and written per second,
// end to end: publish, the bus's copy into the recorder's mailbox, JSON
// encoding and the write, through the final drain.
func BenchmarkRecorder(b *testing.B) {
	run := func(b *testing.B, out io.Writer) {
		bs := bus.New(bus.Options{})
		defer bs.Close()
		bs.Start()
		rec := eventtrace.NewRecorder(bs, out, header(), eventtrace.RecorderOptions{})
		ctx, cancel := context.WithCancel(context.Background())
		result := make(chan error, 1)
		go func() { result <- rec.Start(ctx) }()
		<-rec.SubscriptionReady()
		samples := catalogue(start, "c0ffee")
		b.ReportAllocs()
		b.ResetTimer()
		for i := range b.N {
			bs.Publish(samples[i%len(samples)])
		}
		cancel()
		if err := <-result; err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "events/s")
	}
	b.Run("discard", func(b *testing.B) { run(b, io.Discard) })
	b.Run("file", func(b *testing.B) {
		f, err := os.Create(filepath.Join(b.TempDir(), "bench.trace"))
		if err != nil {
			b.Fatal(err)
		}
		defer f.Close()
		run(b, f)
	})
}

// A disk that hangs does not make the recording grow without bound: once
// MaxPending events wait, the next event fails the recording loudly, with
// the count of events lost, and the trace written holds no event from the
// first lost one on, so it has no hole.
func TestRecorderOverItsMemoryBudgetFailsLoudlyWithoutAHole(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := bus.New(bus.Options{})
		defer b.Close()
		b.Start()
		out := &gatedWriter{gate: make(chan struct{})}
		var log bytes.Buffer
		rec := eventtrace.NewRecorder(b, out, header(), eventtrace.RecorderOptions{Logger: slog.New(slog.NewTextHandler(&log, nil)), MaxPending: 4})
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		result := make(chan error, 1)
		go func() { result <- rec.Start(ctx) }()
		<-rec.SubscriptionReady()
		leader := func(i int) events.Event {
			return events.BecameLeader{Meta: events.Meta{Time: start.Add(time.Duration(i)), CorrelationID: fmt.Sprint(i)}, Identity: "me"}
		}
		b.Publish(leader(0))
		synctest.Wait() // recorded, and its flush hangs on the disk
		for i := 1; i <= 5; i++ {
			b.Publish(leader(i)) // 1–4 wait, 5 is lost
		}
		// Start returns at once, counting the losses it has seen by then;
		// publishing more before it returns would make that count a race.
		err := <-result // the disk still hanging
		assert.EqualError(t, err, "trace recorder: the recording failed: 4 events waited for the writer (the disk is too slow or hangs; RecorderOptions.MaxPending) and events lost after them: 1; the trace ends before the first lost event and records none after it")
		assert.Equal(t, 1, strings.Count(log.String(), "level=ERROR"), log.String())
		assert.Contains(t, log.String(), "events lost after them: 1")
		for i := 6; i <= 11; i++ {
			b.Publish(leader(i))
		}
		assert.Empty(t, b.Stats().Handlers, "a failed recorder no longer holds events")

		close(out.gate) // the disk comes back: what was buffered is older than the loss
		synctest.Wait()
		got, err := eventtrace.Read(bytes.NewReader(out.buf.Bytes()))
		require.NoError(t, err)
		require.Len(t, got.Entries, 1, "the event flushed before the loss; those that waited behind it are not written either")
		assert.Equal(t, leader(0), got.Entries[0].Event)
	})
}
