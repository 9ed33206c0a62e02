package mcpserve

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/musterd/musterd/pkg/identity"
	"github.com/musterd/musterd/pkg/tooldef"
)

// Paths the endpoint serves.
const (
	PathMCP     = "/mcp"
	PathDirect  = "/mcp/direct"
	PathSSE     = "/sse"
	PathMessage = "/message"
	PathHealth  = "/health"
)

// Paths returns every path Handler serves, for a daemon mounting it beside
// other handlers.
func Paths() []string {
	return []string{PathMCP, PathDirect, PathServers, PathSSE, PathMessage, PathHealth}
}

// JSON-RPC error codes of the endpoint's own answers, in the range the
// specification leaves to servers.
const (
	codeUnauthorized   = -32001
	codeNotLeader      = -32002
	codeUnknownSession = -32003
	codeTooLarge       = -32004
)

// sessionHeader is the streamable transport's session header.
const sessionHeader = "Mcp-Session-Id"

// Handler returns the endpoint's HTTP handler: /mcp (streamable HTTP) and
// /sse with /message (SSE) serve muster's view, /mcp/direct every tool
// natively, /health muster's health answer.
func (s *Server) Handler() http.Handler {
	streamOpts := func() *mcp.StreamableHTTPOptions {
		o := &mcp.StreamableHTTPOptions{MaxRequestBodyBytes: s.opts.MaxBodyBytes, Logger: s.log}
		if s.opts.SessionTimeout > 0 {
			o.SessionTimeout = s.opts.SessionTimeout
		}
		return o
	}
	meta := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s.meta }, streamOpts())
	direct := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s.direct }, streamOpts())
	sse := s.sseHandler() // sse.go: the go-sdk's SSE transport, with the sessions in hand

	mux := http.NewServeMux()
	mux.HandleFunc(PathHealth, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusOK)
		_, _ = io.WriteString(w, `{"status":"ok"}`)
	})
	// Each streamable view answers both generations (generations.go).
	metaNew := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s.meta }, s.statelessOpts())
	directNew := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s.direct }, s.statelessOpts())
	mux.Handle(PathMCP, s.guard(generations(s.streamable(meta), metaNew)))
	mux.Handle(PathDirect, s.guard(generations(s.streamable(direct), directNew)))
	mux.Handle(PathServers, s.guard(s.serveServerView())) // serverview.go
	mux.Handle(PathSSE, s.guard(sse))
	mux.Handle(PathMessage, s.guard(sse))
	return mux
}

// streamable serves a streamable HTTP view: a plain GET, without a
// session, answers that the server is alive (muster's CLI checks liveness
// so), and a session's GET stream is served through a sink the event
// follows write to.
func (s *Server) streamable(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		session := r.Header.Get(sessionHeader)
		if r.Method == http.MethodGet && session == "" {
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("Cache-Control", "no-store")
			w.WriteHeader(http.StatusOK)
			_, _ = fmt.Fprintf(w, `{"status":"ok","server":%q,"version":%q}`+"\n", ServerName, s.opts.Version)
			return
		}
		if r.Method == http.MethodGet {
			s.serveStream(h, w, r, session)
			return
		}
		if r.Method == http.MethodDelete && session != "" {
			s.closing(session)
		}
		h.ServeHTTP(w, r)
	})
}

// guard answers, before the go-sdk does, what is wrong with a request as
// a JSON-RPC error naming the problem: no token, a follower asked, a body
// over the bound or not JSON-RPC; and turns the go-sdk's own plain-text
// errors (an unknown session ID, a wrong content type) into JSON-RPC
// errors too.
func (s *Server) guard(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		who, challenge := s.auth.Authenticate(r)
		if challenge != nil {
			w.Header().Set("WWW-Authenticate", challenge.WWWAuthenticate)
			writeRPCError(w, challenge.Status, codeUnauthorized, challenge.Reason)
			return
		}
		next := h
		if who.Owner() != "" {
			r = r.WithContext(identity.With(r.Context(), who))
			next = bindUser(h, who)
		}
		if s.opts.Leader != nil {
			if leader, leading := s.opts.Leader(); !leading {
				msg := "this musterd replica is not the leader and runs no MCP server; "
				if leader != "" {
					msg += "the leader is " + leader + ": connect to it"
				} else {
					msg += "no leader is known yet: retry shortly"
				}
				writeRPCError(w, http.StatusServiceUnavailable, codeNotLeader, msg)
				return
			}
		}
		if r.Method == http.MethodPost {
			body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, s.opts.MaxBodyBytes))
			if err != nil {
				var tooLarge *http.MaxBytesError
				if errors.As(err, &tooLarge) {
					writeRPCError(w, http.StatusRequestEntityTooLarge, codeTooLarge, fmt.Sprintf("request body exceeds the bound of %d bytes", tooLarge.Limit))
					return
				}
				writeRPCError(w, http.StatusBadRequest, jsonrpc.CodeParseError, "reading the request body: "+err.Error())
				return
			}
			if bad := checkBody(body); bad != nil {
				s.metrics.rejected.WithLabelValues(rejectReason(bad.code)).Inc()
				writeRPCError(w, http.StatusBadRequest, bad.code, bad.message)
				return
			}
			r.Body = io.NopCloser(bytes.NewReader(body))
		}
		rw := &rewriter{ResponseWriter: w, r: r}
		next.ServeHTTP(rw, r)
		rw.finish()
	})
}

// bindUser passes a request of an authenticated user to h with the
// go-sdk's record of that user (its auth.TokenInfo), so that the go-sdk
// binds each session to the user who opened it and refuses (403 "session
// user mismatch") another user's request on it: a session ID that leaks
// reaches nobody else's calls. The token was checked already (guard); the
// go-sdk's middleware is the one way to give it the record.
func bindUser(h http.Handler, who identity.Identity) http.Handler {
	return auth.RequireBearerToken(func(context.Context, string, *http.Request) (*auth.TokenInfo, error) {
		return &auth.TokenInfo{UserID: who.Owner()}, nil
	}, &auth.RequireBearerTokenOptions{AllowMissingExpiration: true})(h)
}

func rejectReason(code int64) string {
	if code == jsonrpc.CodeParseError {
		return "parse_error"
	}
	return "invalid_request"
}

// writeRPCError writes a JSON-RPC error response without an id: the
// request's is unknown or unread.
func writeRPCError(w http.ResponseWriter, status int, code int64, msg string) {
	w.Header().Del("X-Content-Type-Options")
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	data, err := tooldef.Marshal(map[string]any{"jsonrpc": "2.0", "id": nil, "error": map[string]any{"code": code, "message": msg}}, false)
	if err == nil {
		_, _ = w.Write(append(data, '\n'))
	}
}

// rewriter turns the go-sdk's plain-text error answers into JSON-RPC
// errors; any other answer passes through untouched.
type rewriter struct {
	http.ResponseWriter
	r       *http.Request
	wrote   bool
	rewrite bool
	status  int
	body    bytes.Buffer
}

func (w *rewriter) WriteHeader(code int) {
	if w.wrote {
		return
	}
	w.wrote = true
	ct := w.Header().Get("Content-Type")
	if code >= 400 && (ct == "" || strings.HasPrefix(ct, "text/plain")) {
		w.rewrite, w.status = true, code
		return
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *rewriter) Write(p []byte) (int, error) {
	if !w.wrote {
		w.WriteHeader(http.StatusOK)
	}
	if w.rewrite {
		return w.body.Write(p)
	}
	return w.ResponseWriter.Write(p)
}

func (w *rewriter) Flush() {
	if !w.rewrite {
		_ = http.NewResponseController(w.ResponseWriter).Flush()
	}
}

// Unwrap lets http.ResponseController reach the connection.
func (w *rewriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func (w *rewriter) finish() {
	if !w.rewrite {
		return
	}
	msg := strings.TrimSpace(w.body.String())
	code := int64(jsonrpc.CodeInvalidRequest)
	switch {
	case w.status == http.StatusNotFound && strings.Contains(msg, "session not found"):
		code = codeUnknownSession
		id := w.r.Header.Get(sessionHeader)
		if id == "" {
			id = w.r.URL.Query().Get("sessionid")
		}
		msg = fmt.Sprintf("unknown session ID %q: the session expired or was closed, or musterd restarted; initialize a new session", id)
	case strings.HasPrefix(msg, "JSON RPC not handled"):
		// The go-sdk checks a request's method before it takes the
		// request: `JSON RPC not handled: "x/y" unsupported`.
		code = jsonrpc.CodeMethodNotFound
		msg = "method not found: " + strings.TrimSpace(strings.TrimPrefix(msg, "JSON RPC not handled:"))
	case w.status == http.StatusRequestEntityTooLarge:
		code = codeTooLarge
	case w.status >= 500:
		code = jsonrpc.CodeInternalError
	}
	writeRPCError(w.ResponseWriter, w.status, code, msg)
}
