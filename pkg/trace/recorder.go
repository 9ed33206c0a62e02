package trace

import (
	"context"
	"io"
	"log/slog"
	"time"

	"github.com/musterd/musterd/pkg/bus"
	"github.com/musterd/musterd/pkg/events"
)

// RecorderName is the Recorder's component and subscription name.
const RecorderName = "recorder"

// RecorderOptions configures a Recorder.
type RecorderOptions struct {
	// Logger receives the recording's first write error. Default
	// slog.Default().
	Logger *slog.Logger
}

// Recorder writes every event published on a bus to a trace. It is a
// lifecycle component; register it as non-critical (a full disk must not
// stop reconciliation) and with no dependencies, so that it subscribes
// before the bus's start barrier is released and stops after the stages
// that depend on others.
type Recorder struct {
	bus    *bus.Bus
	out    io.Writer
	header Header
	log    *slog.Logger
	attach bus.Attachment

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
	return &Recorder{bus: b, out: out, header: h, log: opts.Logger, failed: make(chan struct{})}
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
// more; or, without error, if the bus closes first.
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
		Name:     RecorderName,
		Delivery: bus.Unbounded(),
		Handlers: []bus.Handler{bus.On(r.record)},
		OnIdle:   func() { r.check(r.w.Flush()) },
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
	case <-sub.Done(): // the bus closed
	}
	r.check(r.w.Flush())
	return r.err
}

func (r *Recorder) record(e events.Event) {
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
