package mcpserve

import (
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/musterd/musterd/pkg/tooldef"
)

// streams are the open standalone streams of sessions (a streamable
// session's GET stream, an SSE session's stream), through which a tool
// call's notifications beyond the go-sdk's own reach its client
// (router.Caller.Notify: core_events' follow).
type streams struct {
	mu    sync.Mutex
	sinks map[string]*sink // session key → its standalone stream
}

func (f *streams) init() { f.sinks = map[string]*sink{} }

// notifier returns the Notify of a call on the session key: it writes a
// JSON-RPC notification to the session's stream, if one is open then.
func (s *Server) notifier(key string) func(method string, params any) bool {
	return func(method string, params any) bool {
		s.streams.mu.Lock()
		out := s.streams.sinks[key]
		s.streams.mu.Unlock()
		if out == nil {
			return false // no stream open: nowhere to say it
		}
		data, err := tooldef.Marshal(map[string]any{"jsonrpc": "2.0", "method": method, "params": params}, false)
		if err != nil {
			return false
		}
		return out.inject(data)
	}
}

// sink is a session's standalone SSE stream, through which the go-sdk
// writes its events and the follows theirs. The go-sdk writes each event in
// one Write; sink serializes Writes, so an injected event always falls
// between two of the go-sdk's, never inside one.
type sink struct {
	http.ResponseWriter
	mu     sync.Mutex
	closed bool // the GET has returned: its writer is the server's again
}

func (k *sink) Write(p []byte) (int, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.ResponseWriter.Write(p)
}

func (k *sink) Flush() {
	k.mu.Lock()
	defer k.mu.Unlock()
	_ = http.NewResponseController(k.ResponseWriter).Flush()
}

// Unwrap lets http.ResponseController reach the connection.
func (k *sink) Unwrap() http.ResponseWriter { return k.ResponseWriter }

// inject writes one JSON-RPC message as an SSE event, and reports whether
// it did.
func (k *sink) inject(msg []byte) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.closed {
		return false
	}
	rc := http.NewResponseController(k.ResponseWriter)
	_ = rc.SetWriteDeadline(time.Now().Add(10 * time.Second))
	defer func() { _ = rc.SetWriteDeadline(time.Time{}) }()
	if _, err := fmt.Fprintf(k.ResponseWriter, "event: message\ndata: %s\n\n", msg); err != nil {
		return false
	}
	return rc.Flush() == nil
}

// serveStream serves a streamable session's standalone GET stream through
// a sink registered for the follows.
func (s *Server) serveStream(h http.Handler, w http.ResponseWriter, r *http.Request, session string) {
	k := &sink{ResponseWriter: w}
	f := &s.streams
	f.mu.Lock()
	f.sinks[session] = k
	f.mu.Unlock()
	defer func() {
		f.mu.Lock()
		if f.sinks[session] == k {
			delete(f.sinks, session)
		}
		f.mu.Unlock()
		// An injection under way finishes first; none starts after.
		k.mu.Lock()
		k.closed = true
		k.mu.Unlock()
	}()
	h.ServeHTTP(k, r)
}
