package main

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
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
// /refusals on mux says how many. GET /tokens lists, as a JSON array, every
// token it let in: a test's inventory of what its client was given, to
// look for where it must not be. POST /refuse-taken makes it refuse, from
// then on, every token it let in so far, as a server whose user's grant
// was revoked before the tokens expired.
func guardCounting(mux *http.ServeMux, verify auth.TokenVerifier, metadataURL string) func(http.Handler) http.Handler {
	var refusals atomic.Int64
	mux.HandleFunc("GET /refusals", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintln(w, refusals.Load())
	})
	var taken, refused sync.Map // token → struct{}
	mux.HandleFunc("POST /refuse-taken", func(w http.ResponseWriter, _ *http.Request) {
		taken.Range(func(k, _ any) bool { refused.Store(k, struct{}{}); return true })
		w.WriteHeader(http.StatusNoContent)
	})
	mux.HandleFunc("GET /tokens", func(w http.ResponseWriter, _ *http.Request) {
		tokens := []string{}
		taken.Range(func(k, _ any) bool { tokens = append(tokens, k.(string)); return true })
		slices.Sort(tokens)
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(tokens)
	})
	guard := auth.RequireBearerToken(verify, &auth.RequireBearerTokenOptions{ResourceMetadataURL: metadataURL})
	return func(h http.Handler) http.Handler {
		// Noted as the guard lets it in, before the request is served: a
		// client that got its answer finds its token listed.
		guarded := guard(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if token, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok {
				taken.Store(token, struct{}{})
			}
			h.ServeHTTP(w, r)
		}))
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			token, bearer := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
			if _, no := refused.Load(token); bearer && no {
				refusals.Add(1)
				w.Header().Set("WWW-Authenticate", `Bearer error="invalid_token", resource_metadata="`+metadataURL+`"`)
				http.Error(w, "the token was revoked", http.StatusUnauthorized)
				return
			}
			// Counted as it is written, before the client can see it.
			guarded.ServeHTTP(&statusRecorder{ResponseWriter: w, unauthorized: func() { refusals.Add(1) }}, r)
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

// statusRecorder notes the status a handler wrote, and calls
// unauthorized (when set) as a 401 is written.
type statusRecorder struct {
	http.ResponseWriter
	status       int
	unauthorized func()
}

func (s *statusRecorder) WriteHeader(code int) {
	if s.status == 0 {
		s.status = code
		if code == http.StatusUnauthorized && s.unauthorized != nil {
			s.unauthorized()
		}
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
