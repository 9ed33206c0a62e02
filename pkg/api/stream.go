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
)

// events streams the bus as server-sent events: "event: <type>" and
// "data: <events.Marshal JSON>" per event, a ": heartbeat" comment when
// idle, and ": dropped N" when the client's subscription dropped N events
// because the client read too slowly.
func (s *server) events(w http.ResponseWriter, r *http.Request) {
	filter, err := types.ParseEventFilter(r.URL.Query())
	switch {
	case errors.Is(err, types.ErrUnknownKind):
		writeError(w, http.StatusNotFound, err.Error())
		return
	case err != nil:
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no") // nginx would buffer the stream
	if r.Method == http.MethodHead {
		w.WriteHeader(http.StatusOK)
		return
	}

	// The handler runs on the subscription's goroutine and hands events
	// over; while this goroutine writes, the subscription's bounded mailbox
	// absorbs what comes, and drops (and counts) the excess.
	handoff := make(chan events.Event, 64)
	gone := make(chan struct{})
	name := fmt.Sprintf("api-events-%d", s.streams.Add(1))
	sub, err := s.opts.Bus.Subscribe(bus.SubscriberOptions{
		Name:     name,
		Delivery: bus.Lossy(streamBuffer),
		Handlers: []bus.Handler{bus.On(func(e events.Event) {
			if !filter.Match(e) {
				return
			}
			select {
			case handoff <- e:
			case <-gone:
			}
		})},
	})
	if err != nil {
		writeError(w, http.StatusServiceUnavailable, "event stream unavailable: "+err.Error())
		return
	}
	defer func() {
		close(gone) // releases a handler blocked on the handoff
		sub.Unsubscribe()
		<-sub.Done()
	}()
	log := s.log.With("subscriber", name)
	log.Debug("event stream opened", "remote", r.RemoteAddr, "filter", r.URL.RawQuery)

	rc := http.NewResponseController(w)
	// The client's Events call returns once it has these headers; the
	// subscription exists by then, so it misses nothing published after.
	w.WriteHeader(http.StatusOK)
	if err := rc.Flush(); err != nil {
		return
	}
	// A deadline left behind would fail the connection's next response.
	defer func() { _ = rc.SetWriteDeadline(time.Time{}) }()
	heartbeat := time.NewTicker(heartbeatInterval)
	defer heartbeat.Stop()
	var buf bytes.Buffer
	var reported uint64 // drops announced so far
	for {
		buf.Reset()
		select {
		case <-r.Context().Done():
			log.Debug("event stream closed by the client", "dropped", reported)
			return
		case <-sub.Done():
			log.Debug("event stream ended: the bus closed", "dropped", reported)
			return
		case <-heartbeat.C:
			buf.WriteString(": heartbeat\n\n")
		case e := <-handoff:
			s.encode(&buf, e)
			for range len(handoff) {
				s.encode(&buf, <-handoff)
			}
		}
		if dropped := s.dropped(name); dropped > reported {
			fmt.Fprintf(&buf, ": dropped %d\n\n", dropped-reported)
			reported = dropped
		}
		_ = rc.SetWriteDeadline(time.Now().Add(streamWriteTimeout)) // not every writer has deadlines
		if _, err := w.Write(buf.Bytes()); err != nil {
			log.Debug("event stream ended: write failed", "error", err, "dropped", reported)
			return
		}
		if err := rc.Flush(); err != nil {
			log.Debug("event stream ended: flush failed", "error", err, "dropped", reported)
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

// dropped returns how many events subscription name has dropped so far.
func (s *server) dropped(name string) uint64 {
	var n uint64
	for _, h := range s.opts.Bus.Stats().Handlers {
		if h.Subscriber == name {
			n += h.Dropped
		}
	}
	return n
}
