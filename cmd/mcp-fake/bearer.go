package main

import (
	"context"
	"crypto/subtle"
	"fmt"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
)

// requireBearer makes a protected server of the one at base: its MCP
// endpoints answer a request without a token verify takes as a bearer
// with 401 and an RFC 9728 challenge naming its protected-resource
// metadata, which mux serves, and GET /refusals says how many it refused,
// so that a test can tell whether its client knocks again.
func requireBearer(mux *http.ServeMux, base string, verify auth.TokenVerifier) func(http.Handler) http.Handler {
	metadataURL := base + "/.well-known/oauth-protected-resource"
	mux.Handle("/.well-known/oauth-protected-resource", auth.ProtectedResourceMetadataHandler(&oauthex.ProtectedResourceMetadata{
		Resource: base + "/mcp", BearerMethodsSupported: []string{"header"},
	}))
	return guardCounting(mux, verify, metadataURL)
}

// guardCounting is the go-sdk's RequireBearerToken over verify, its
// challenge naming metadataURL, which counts the 401s it answers: GET
// /refusals on mux says how many. POST /refuse-next makes it refuse the
// next request once (refusenext.go).
func guardCounting(mux *http.ServeMux, verify auth.TokenVerifier, metadataURL string) func(http.Handler) http.Handler {
	var refusals atomic.Int64
	var refuseNext atomic.Bool
	mux.HandleFunc("GET /refusals", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintln(w, refusals.Load())
	})
	mux.HandleFunc("POST /refuse-next", refuseNextHandler(&refuseNext))
	guard := auth.RequireBearerToken(verify, &auth.RequireBearerTokenOptions{ResourceMetadataURL: metadataURL})
	return func(h http.Handler) http.Handler {
		guarded := guard(h)
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if refusedOnce(&refuseNext, w, metadataURL) {
				refusals.Add(1)
				return
			}
			counted := &statusRecorder{ResponseWriter: w}
			guarded.ServeHTTP(counted, r)
			if counted.status == http.StatusUnauthorized {
				refusals.Add(1)
			}
		})
	}
}

// oneToken takes token, and no other.
func oneToken(token string) auth.TokenVerifier {
	return func(_ context.Context, got string, _ *http.Request) (*auth.TokenInfo, error) {
		if subtle.ConstantTimeCompare([]byte(got), []byte(token)) != 1 {
			return nil, auth.ErrInvalidToken
		}
		return &auth.TokenInfo{Expiration: time.Now().Add(time.Hour)}, nil
	}
}

// statusRecorder notes the status a handler wrote.
type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (s *statusRecorder) WriteHeader(code int) {
	if s.status == 0 {
		s.status = code
	}
	s.ResponseWriter.WriteHeader(code)
}

// Flush passes on to the writer beneath, which the SSE streams need.
func (s *statusRecorder) Flush() {
	if f, ok := s.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap lets http.ResponseController reach the writer beneath.
func (s *statusRecorder) Unwrap() http.ResponseWriter { return s.ResponseWriter }
