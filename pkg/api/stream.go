package api

import (
	"bytes"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/musterd/musterd/pkg/api/types"
	"github.com/musterd/musterd/pkg/bus"
	"github.com/musterd/musterd/pkg/events"
	"github.com/musterd/musterd/pkg/eventtrace"
)

// events streams the bus, filtered, in one of two formats.
//
// By default (format=sse), as server-sent events: "event: <type>" and
// "data: <events.Marshal JSON>" per event, a ": heartbeat" comment when
// idle, and ": dropped N" when the client's subscription dropped N events
// because the client read too slowly.
//
// With format=trace, as a trace (docs/trace-format.md): a header line whose
// start is the time the stream opened (and which holds no configuration:
// the API does not know it), then one line per event, offsets counted from
// that start. JSON Lines have no comments, so there is no heartbeat, and a
// trace must have no holes: a client too slow to keep up, whose
// subscription drops an event, gets the trace up to the last event before
// the gap and then an end line saying so (reason slow-client, with the
// count of events dropped); when the daemon stops, the end line says
// shutdown. The trace is of version 2, which has the end line.
func (s *server) events(w http.ResponseWriter, r *http.Request) {
	// The events name every change, error and correlation as it happens:
	// with a token configured, they are for its holders.
	if !s.requireToken(w, r, "to read events") {
		return
	}
	filter, err := types.ParseEventFilter(r.URL.Query())
	switch {
	case errors.Is(err, types.ErrUnknownKind):
		writeError(w, http.StatusNotFound, err.Error())
		return
	case err != nil:
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	asTrace := false
	switch format := r.URL.Query().Get("format"); format {
	case "", "sse":
	case "trace":
		asTrace = true
	default:
		writeError(w, http.StatusBadRequest, fmt.Sprintf("unknown format %q: use sse or trace", format))
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	if asTrace {
		h.Set("Content-Type", "application/jsonl")
	}
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no") // nginx would buffer the stream
	if r.Method == http.MethodHead {
		w.WriteHeader(http.StatusOK)
		return
	}

	// The follower's bounded mailbox absorbs what comes while this
	// goroutine writes, and drops (and counts) the excess.
	name := fmt.Sprintf("api-events-%d", s.streams.Add(1))
	follow, err := bus.Follow(s.opts.Bus, bus.FollowOptions[events.Event]{Name: name, Buffer: streamBuffer,
		Select: func(e events.Event) (events.Event, bool) { return e, filter.Match(e) }})
	if err != nil {
		writeError(w, http.StatusServiceUnavailable, "event stream unavailable: "+err.Error())
		return
	}
	defer follow.Stop()
	log := s.log.With("subscriber", name)
	log.Debug("event stream opened", "remote", r.RemoteAddr, "filter", r.URL.RawQuery)

	var buf bytes.Buffer
	var tw *eventtrace.Writer
	if asTrace {
		// The header's start is now: events published from here on are
		// the stream's.
		if tw, err = eventtrace.NewWriter(&buf, eventtrace.Header{Start: events.Now(), Version: eventtrace.VersionEnd}); err == nil {
			err = tw.Flush()
		}
		if err != nil {
			writeError(w, http.StatusInternalServerError, err.Error())
			return
		}
	}
	rc := http.NewResponseController(w)
	// The client's Events call returns once it has these headers; the
	// subscription exists by then, so it misses nothing published after.
	w.WriteHeader(http.StatusOK)
	if _, err := w.Write(buf.Bytes()); err != nil {
		return
	}
	if err := rc.Flush(); err != nil {
		return
	}
	// A deadline left behind would fail the connection's next response.
	defer func() { _ = rc.SetWriteDeadline(time.Time{}) }()
	var heartbeat <-chan time.Time // none in a trace
	if !asTrace {
		ticker := time.NewTicker(heartbeatInterval)
		defer ticker.Stop()
		heartbeat = ticker.C
	}
	send := func() error {
		_ = rc.SetWriteDeadline(time.Now().Add(streamWriteTimeout)) // not every writer has deadlines
		if _, err := w.Write(buf.Bytes()); err != nil {
			return fmt.Errorf("write: %w", err)
		}
		if err := rc.Flush(); err != nil {
			return fmt.Errorf("flush: %w", err)
		}
		return nil
	}
	// endTrace sends the trace's end line, for reason.
	endTrace := func(reason string, dropped uint64) {
		buf.Reset()
		_ = tw.End(events.Now(), reason, dropped) // into buf: cannot fail
		_ = tw.Flush()
		if err := send(); err != nil {
			log.Debug("trace stream: its end line was not sent", "reason", reason, "error", err)
		}
	}
	var reported uint64 // drops announced so far
	var batch []events.Event
	for {
		buf.Reset()
		batch = batch[:0]
		select {
		case <-r.Context().Done():
			log.Debug("event stream closed by the client", "dropped", reported)
			return
		case <-follow.Done():
			log.Debug("event stream ended: the bus closed", "dropped", reported)
			if asTrace {
				endTrace(eventtrace.EndShutdown, 0)
			}
			return
		case <-heartbeat:
			buf.WriteString(": heartbeat\n\n")
		case e := <-follow.Events():
			batch = append(batch, e)
			for range len(follow.Events()) {
				batch = append(batch, <-follow.Events())
			}
		}
		if asTrace {
			// Every event of the batch was handed over before this count,
			// so if it is zero none comes after a gap; if it is not, the
			// trace ends before the batch.
			if dropped := follow.Dropped(); dropped > 0 {
				log.Warn("trace stream ended: the client read too slowly and events were dropped", "dropped", dropped)
				endTrace(eventtrace.EndSlowClient, dropped)
				return
			}
			for _, e := range batch {
				s.encodeTrace(tw, e)
			}
			_ = tw.Flush() // into buf: cannot fail
		} else {
			for _, e := range batch {
				s.encode(&buf, e)
			}
			if dropped := follow.Dropped(); dropped > reported {
				fmt.Fprintf(&buf, ": dropped %d\n\n", dropped-reported)
				reported = dropped
			}
		}
		if err := send(); err != nil {
			log.Debug("event stream ended", "error", err, "dropped", reported)
			return
		}
	}
}

// encode appends e as one server-sent event. An event that cannot be
// encoded (a user type with a field JSON refuses) is logged and skipped:
// one bad event must not end the stream.
func (s *server) encode(buf *bytes.Buffer, e events.Event) {
	data, err := events.Marshal(e)
	if err != nil {
		s.log.Error("event stream: cannot encode event; skipped", "type", e.EventType(), "error", err)
		return
	}
	fmt.Fprintf(buf, "event: %s\ndata: %s\n\n", e.EventType(), data)
}

// encodeTrace writes e as one trace line into tw's buffer. An event that
// cannot be encoded is logged and skipped, as in encode.
func (s *server) encodeTrace(tw *eventtrace.Writer, e events.Event) {
	if err := tw.Record(e); err != nil {
		s.log.Error("event stream: cannot encode event; skipped", "type", e.EventType(), "error", err)
	}
}
