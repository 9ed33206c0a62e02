package mcpserve

import (
	"crypto/rand"
	"fmt"
	"mime"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/musterd/musterd/pkg/identity"
)

// sseKeyPrefix marks an SSE session's key among the streams, which
// a streamable session's ID keys otherwise. The go-sdk gives SSE sessions
// no ID (ServerSession.ID is ""), so musterd keys them by the sessionid of
// their message endpoint.
const sseKeyPrefix = "sse:"

// sseSessions are the open SSE sessions: by the sessionid their POSTs
// carry, and by their *mcp.ServerSession, for a call to find its stream.
type sseSessions struct {
	mu        sync.Mutex
	byID      map[string]*sseTransport
	bySession map[*mcp.ServerSession]string // → key (sseKeyPrefix + sessionid)
}

// sseTransport is an SSE session's transport, and whether the server's
// Connect of it has returned.
//
// Its POSTs wait for that: the go-sdk's Connect sends the endpoint event,
// so a client may POST its first message before Connect has set what the
// session may serve, and the go-sdk's server/discover, reading it unset,
// then offered the newest protocol, which SSE cannot serve: a client that
// asked for it kept it, about once in twenty connections under load.
type sseTransport struct {
	*mcp.SSEServerTransport
	connected chan struct{} // closed once Connect returned
	// owner is the user who opened the session (identity's Owner), ""
	// for nobody in particular: only that user may post to it.
	owner string
}

// sseHandler serves muster's view over SSE (GET /sse opens a session, POST
// /message?sessionid=… or /sse?sessionid=… sends to it) as the go-sdk's
// mcp.SSEHandler does, built on the go-sdk's own transport
// (mcp.SSEServerTransport, its public extension point) because
// SSEHandler keeps the *mcp.ServerSession of a GET to itself. Holding it,
// musterd can do for SSE what it does for streamable sessions:
//
//   - the calls in flight are cancelled (cause ErrSessionClosed) when the
//     client's stream closes; the go-sdk would close the session only once
//     they had run to their end;
//   - core_events' follow writes notifications/muster/event to the stream,
//     through the same sink as a streamable session's GET stream.
func (s *Server) sseHandler() http.Handler {
	reg := &s.sse
	reg.mu.Lock()
	if reg.byID == nil { // one registry however many handlers serve it
		reg.byID = map[string]*sseTransport{}
		reg.bySession = map[*mcp.ServerSession]string{}
	}
	reg.mu.Unlock()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// DNS rebinding protection, as the go-sdk's handler has it: a
		// request that arrived on a loopback address must name a loopback
		// host.
		if local, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr); ok && local != nil {
			if isLoopback(local.String()) && !isLoopback(r.Host) {
				http.Error(w, fmt.Sprintf("Forbidden: invalid Host header %q", r.Host), http.StatusForbidden)
				return
			}
		}
		switch r.Method {
		case http.MethodPost:
			if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mt != "application/json" {
				http.Error(w, "Content-Type must be 'application/json'", http.StatusUnsupportedMediaType)
				return
			}
			id := r.URL.Query().Get("sessionid")
			if id == "" {
				http.Error(w, "sessionid must be provided", http.StatusBadRequest)
				return
			}
			reg.mu.Lock()
			t := reg.byID[id]
			reg.mu.Unlock()
			if t == nil {
				http.Error(w, "session not found", http.StatusNotFound)
				return
			}
			// A session is its user's alone, as the go-sdk keeps a
			// streamable one (bindUser): the calls posted here run as the
			// user who opened it.
			if who, _ := identity.From(r.Context()); who.Owner() != t.owner {
				http.Error(w, "session user mismatch", http.StatusForbidden)
				return
			}
			select {
			case <-t.connected:
			case <-r.Context().Done():
				return
			}
			t.ServeHTTP(w, r)
		case http.MethodGet:
			s.serveSSE(w, r)
		default:
			w.Header().Set("Allow", "GET, POST")
			http.Error(w, "Method Not Allowed", http.StatusMethodNotAllowed)
		}
	})
}

// serveSSE serves one SSE session for as long as its GET lasts.
func (s *Server) serveSSE(w http.ResponseWriter, r *http.Request) {
	reg := &s.sse
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.Header().Set("Connection", "keep-alive")
	id := rand.Text()
	endpoint, err := r.URL.Parse("?sessionid=" + id)
	if err != nil {
		http.Error(w, "internal error: failed to create endpoint", http.StatusInternalServerError)
		return
	}
	key := sseKeyPrefix + id
	// The go-sdk writes each message in one Write; the sink serializes
	// them with the follows' injected events.
	k := &sink{ResponseWriter: w}
	t := &sseTransport{
		SSEServerTransport: &mcp.SSEServerTransport{Endpoint: endpoint.RequestURI(), Response: k, MaxRequestBodyBytes: s.opts.MaxBodyBytes},
		connected:          make(chan struct{}),
	}
	if who, ok := identity.From(r.Context()); ok {
		t.owner = who.Owner()
	}
	reg.mu.Lock()
	reg.byID[id] = t
	reg.mu.Unlock()
	f := &s.streams
	f.mu.Lock()
	f.sinks[key] = k
	f.mu.Unlock()
	defer func() {
		reg.mu.Lock()
		delete(reg.byID, id)
		reg.mu.Unlock()
		f.mu.Lock()
		delete(f.sinks, key)
		f.mu.Unlock()
		// An injection under way finishes first; none starts after.
		k.mu.Lock()
		k.closed = true
		k.mu.Unlock()
	}()

	ss, err := s.meta.Connect(r.Context(), t.SSEServerTransport, nil)
	close(t.connected) // on failure too, so that no POST waits for ever
	if err != nil {
		http.Error(w, "connection failed", http.StatusInternalServerError)
		return
	}
	reg.mu.Lock()
	reg.bySession[ss] = key
	reg.mu.Unlock()
	closed := s.sessionClosed(ss) // the watch the calls of ss are tied to
	ended := make(chan struct{})
	go func() {
		_ = ss.Wait()
		close(ended)
	}()
	select {
	case <-r.Context().Done():
		// The client's stream closed: its calls are cancelled before the
		// session closes, which waits for them.
		if w, ok := s.watches.Load(ss); ok {
			w.(*watch).close()
		}
	case <-ended:
	case <-closed.Done():
	}
	_ = ss.Close()
	reg.mu.Lock()
	delete(reg.bySession, ss)
	reg.mu.Unlock()
}

// sseKey returns the key of the SSE session ss, or "" if it is none.
func (s *Server) sseKey(ss *mcp.ServerSession) string {
	s.sse.mu.Lock()
	defer s.sse.mu.Unlock()
	return s.sse.bySession[ss]
}

// isLoopback reports whether addr (host, or host:port) is a loopback
// address or "localhost".
func isLoopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		host = strings.Trim(addr, "[]")
	}
	if host == "localhost" {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.IsLoopback()
}
