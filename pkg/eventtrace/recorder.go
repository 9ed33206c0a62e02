package eventtrace

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/musterd/musterd/pkg/bus"
	"github.com/musterd/musterd/pkg/events"
)

// RecorderName is the Recorder's component and subscription name.
const RecorderName = "recorder"

// RecorderOptions configures a Recorder. The zero value is the default.
type RecorderOptions struct {
	// Logger receives the recording's first write error. Default
	// slog.Default().
	Logger *slog.Logger
	// MaxPending, when positive, is the recording's memory budget: how
	// many events may wait in its mailbox for the writer (a batch taken
	// from the mailbox, at most as many again, waits too). An event
	// published when the mailbox is full, because the disk is too slow or
	// hangs, fails the recording: nothing more is written, so the trace
	// ends before that event with no hole, and Start returns an error
	// saying so and how many events found the mailbox full. Default 0: no
	// budget, the recording is lossless and its mailbox grows as long as
	// the disk lags (a recording exists to hold every event; set a budget
	// where memory matters more than a complete trace).
	MaxPending int
}

// Recorder writes every event published on a bus to a trace. It is a
// lifecycle component; register it as non-critical (a full disk must not
// stop reconciliation) and with no dependencies, so that it subscribes
// before the bus's start barrier is released and stops after the stages
// that depend on others.
type Recorder struct {
	bus        *bus.Bus
	out        io.Writer
	header     Header
	log        *slog.Logger
	attach     bus.Attachment
	maxPending int

	// Set by the bus's OnDrop, on publishers' goroutines.
	overflowed   atomic.Bool   // an event found the mailbox full
	dropped      atomic.Uint64 // events that found it full
	overflow     chan struct{} // closed at the first
	overflowOnce sync.Once

	// Written only by the subscription's goroutine, read by Start once it
	// has ended.
	w      *Writer
	err    error
	failed chan struct{} // closed on the first write error
}

// NewRecorder returns a recorder of b's events to out, under the header h.
// A zero h.Start is the time Start is called. Nothing is written until
// Start.
func NewRecorder(b *bus.Bus, out io.Writer, h Header, opts RecorderOptions) *Recorder {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	return &Recorder{bus: b, out: out, header: h, log: opts.Logger, maxPending: opts.MaxPending,
		failed: make(chan struct{}), overflow: make(chan struct{})}
}

// delivery is lossless: unbounded without a budget, else bounded by it.
func (r *Recorder) delivery() bus.Delivery {
	if r.maxPending <= 0 {
		return bus.Unbounded()
	}
	return bus.Lossy(r.maxPending)
}

// Name is RecorderName.
func (r *Recorder) Name() string { return RecorderName }

// SubscriptionReady is closed once the recorder has subscribed.
func (r *Recorder) SubscriptionReady() <-chan struct{} { return r.attach.SubscriptionReady() }

// BusySince reports a write in progress, for stall detection: a writer
// blocked on a dead disk shows as a stall.
func (r *Recorder) BusySince() (time.Time, bool) { return r.attach.BusySince() }

// Start writes the header, subscribes to every event and writes each, in
// publish order, flushing whenever it has caught up. It returns when ctx
// is done, once it has written and flushed every event whose Publish
// returned before ctx was cancelled (events published while it stops may
// or may not be written; none after Start returns). It returns early with
// the first write error, which it also logs, and then records nothing
// more; at once, with an error it also logs, when an event finds the
// mailbox full (see RecorderOptions.MaxPending), a write that hangs still
// hanging (it may complete later, with events older than the lost one);
// or, without error, if the bus closes first.
func (r *Recorder) Start(ctx context.Context) error {
	h := r.header
	if h.Start.IsZero() {
		h.Start = events.Now()
	}
	w, err := NewWriter(r.out, h)
	if err != nil {
		r.log.Error("trace recorder: cannot make the trace header; not recording", "error", err)
		return err
	}
	r.w = w
	sub, err := r.bus.Subscribe(bus.SubscriberOptions{
		Name: RecorderName,
		// Lossless; with a budget, the first loss ends the recording.
		Delivery: r.delivery(),
		Handlers: []bus.Handler{bus.On(r.record)},
		OnIdle:   func() { r.check(r.w.Flush()) },
		OnDrop:   r.dropped1,
	})
	if err != nil {
		return err
	}
	r.attach.Attach(sub)
	select {
	case <-ctx.Done():
		sub.Drain()
		<-sub.Done()
	case <-r.failed:
		sub.Unsubscribe()
		<-sub.Done()
		return r.err
	case <-r.overflow:
		// The writer may hang for ever: no waiting for it. What it still
		// writes is older than the first lost event.
		sub.Unsubscribe() // no event is counted as lost after this
		err := fmt.Errorf("trace recorder: the recording failed: %d events waited for the writer (the disk is too slow or hangs; RecorderOptions.MaxPending) and events lost after them: %d; the trace ends before the first lost event and records none after it",
			r.maxPending, r.dropped.Load())
		r.log.Error(err.Error())
		return err
	case <-sub.Done(): // the bus closed
	}
	r.check(r.w.Flush())
	return r.err
}

// dropped1 is the subscription's OnDrop: from the first loss on, the
// handler writes nothing, so the trace has no hole.
func (r *Recorder) dropped1(events.Event) {
	r.overflowed.Store(true)
	r.dropped.Add(1)
	r.overflowOnce.Do(func() { close(r.overflow) })
}

func (r *Recorder) record(e events.Event) {
	if r.overflowed.Load() {
		return // every event from here on is after a lost one
	}
	if r.err == nil {
		r.check(r.w.Record(e))
	}
}

// check records the first error, logs it and ends the recording.
func (r *Recorder) check(err error) {
	if err == nil || r.err != nil {
		return
	}
	r.err = err
	r.log.Error("trace recorder: write failed; recording stopped, reconciliation goes on", "error", err)
	close(r.failed)
}
