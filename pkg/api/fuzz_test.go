package api_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/musterd/musterd/pkg/api"
	"github.com/musterd/musterd/pkg/apis/muster/v1alpha1"
	"github.com/musterd/musterd/pkg/bus"
	"github.com/musterd/musterd/pkg/events"
	"github.com/musterd/musterd/pkg/resources"
	"github.com/musterd/musterd/pkg/statusync"
)

// FuzzRequest sends the API requests of any method, path and query, with
// and without the token, and requires that it never panics nor fails
// inside (no 5xx), that every refusal is a JSON {"error":…} with a 4xx
// code (an unclean path is redirected to its clean form), and that a reconcile is triggered only with the token and only for
// a declared resource.
func FuzzRequest(f *testing.F) {
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	b := bus.New(bus.Options{Logger: quiet})
	b.Start()
	f.Cleanup(b.Close)
	index := resources.New()
	docs, err := v1alpha1.DecodeFile("workflows/greet.yaml", []byte(greetWorkflow))
	if err != nil {
		f.Fatal(err)
	}
	idx := make([]resources.Doc, len(docs))
	for i, d := range docs {
		idx[i] = resources.Doc{Key: d.Key(), Object: d.Object, Hash: d.Hash, Err: d.Err}
	}
	index.SetFile("workflows/greet.yaml", idx, nil, greetKey)
	var (
		mu        sync.Mutex
		triggered []events.Key
	)
	handler, err := api.NewHandler(api.Options{
		Index:    index,
		Statuses: statusync.NewStore(b, statusync.StoreOptions{Logger: quiet}),
		Trigger: func(k events.Key) {
			mu.Lock()
			defer mu.Unlock()
			triggered = append(triggered, k)
		},
		Bus:     b,
		Metrics: prometheus.NewRegistry(),
		Ready:   func() bool { return true },
		Token:   "s3cret",
		Logger:  quiet,
	})
	if err != nil {
		f.Fatal(err)
	}

	for _, seed := range []struct {
		method uint8
		target string
		token  bool
	}{
		{0, "/api/v1/resources?kind=wf&namespace=team-a", false},
		{0, "/api/v1/resources/workflows/team-a/greet", false},
		{0, "/api/v1/resources/wf/team-a/greet/events", true},
		{2, "/api/v1/resources/wf/team-a/greet/reconcile", true},
		{2, "/api/v1/resources/wf/team-a/nope/reconcile", true},
		{2, "/api/v1/resources/wf/team-a/greet/reconcile", false},
		{0, "/api/v1/events?kind=mcps&name=x&type=ResourceSynced&format=trace", true},
		{0, "/api/v1/events?type=Nope", true},
		{0, "/api/v1/resources/%2e%2e/%2F/..%00", false},
		{0, "/api/v1/resources/wf/Team_A/gr%C3%A9et", false},
		{1, "/healthz", false},
		{3, "//api/v1//resources/", false},
		{0, "/metrics?x=%zz", false},
	} {
		f.Add(seed.method, seed.target, seed.token)
	}
	methods := []string{http.MethodGet, http.MethodHead, http.MethodPost, http.MethodDelete, http.MethodPut, "OPTIONS", "PROPFIND"}
	f.Fuzz(func(t *testing.T, m uint8, target string, token bool) {
		req, err := http.NewRequest(methods[int(m)%len(methods)], "http://musterd"+target, nil)
		if err != nil || req.URL.Host != "musterd" {
			return // not a request a client could send
		}
		// The event stream lasts as long as its client: this one is gone at
		// once.
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		req = req.WithContext(ctx)
		if token {
			req.Header.Set("Authorization", "Bearer s3cret")
		}
		mu.Lock()
		before := len(triggered)
		mu.Unlock()
		rec := httptest.NewRecorder()
		handler.ServeHTTP(rec, req)

		if rec.Code >= 500 {
			t.Fatalf("%s %s: %d %s", req.Method, target, rec.Code, rec.Body)
		}
		if rec.Code >= 300 && rec.Code < 400 {
			// net/http's mux redirects an unclean path to its clean form.
			loc, err := url.Parse(rec.Header().Get("Location"))
			if err != nil || !strings.HasPrefix(loc.Path, "/") || strings.Contains(loc.Path, "//") || loc.Host != "" {
				t.Fatalf("%s %s: %d to %q", req.Method, target, rec.Code, rec.Header().Get("Location"))
			}
			return
		}
		if rec.Code >= 400 && req.Method != http.MethodHead {
			var e struct{ Error string }
			if err := json.Unmarshal(rec.Body.Bytes(), &e); err != nil || e.Error == "" {
				t.Fatalf("%s %s: %d without a JSON error: %q", req.Method, target, rec.Code, rec.Body)
			}
		}
		mu.Lock()
		fired := triggered[before:]
		mu.Unlock()
		if len(fired) > 0 {
			if !token || req.Method != http.MethodPost || rec.Code != http.StatusAccepted || !strings.HasSuffix(req.URL.Path, "/reconcile") {
				t.Fatalf("%s %s (token %v): triggered %v, answered %d", req.Method, target, token, fired, rec.Code)
			}
			if len(fired) != 1 || fired[0] != greetKey {
				t.Fatalf("%s %s: triggered %v, which is not the one declared resource", req.Method, target, fired)
			}
		}
	})
}
