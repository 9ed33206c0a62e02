package mcpserve

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/musterd/musterd/pkg/apis/muster/v1alpha1"
	"github.com/musterd/musterd/pkg/bus"
	"github.com/musterd/musterd/pkg/catalogue"
	"github.com/musterd/musterd/pkg/coretools"
	"github.com/musterd/musterd/pkg/events"
	"github.com/musterd/musterd/pkg/musterevents"
	"github.com/musterd/musterd/pkg/resources"
	"github.com/musterd/musterd/pkg/router"
	"github.com/musterd/musterd/pkg/statusync"
)

// fakeBackend is a Backend whose servers' offer the test sets. With rt
// set, its tools are listed and called through that real router, which
// adds the core tools and further sources to the fake servers' tools, as
// the daemon's router does.
type fakeBackend struct {
	mu        sync.Mutex
	tools     []*mcp.Tool
	resources []*mcp.Resource
	prompts   []*mcp.Prompt
	call      func(ctx context.Context, name string, args map[string]any, progress func(*mcp.ProgressNotificationParams)) (*mcp.CallToolResult, error)
	rt        *router.Router
}

// fakeServers are a fakeBackend's own tools, a source of its router.
type fakeServers struct{ b *fakeBackend }

func (f fakeServers) Tools() []*mcp.Tool { return f.b.offered() }

func (f fakeServers) CallTool(ctx context.Context, name string, args map[string]any, progress func(*mcp.ProgressNotificationParams)) (*mcp.CallToolResult, error) {
	return f.b.serve(ctx, name, args, progress)
}

// noServers is a router's supervisor that runs none.
type noServers struct{ router.Servers }

func (b *fakeBackend) setTools(tools ...*mcp.Tool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.tools = tools
}

func (b *fakeBackend) offered() []*mcp.Tool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.Clone(b.tools)
}

func (b *fakeBackend) serve(ctx context.Context, name string, args map[string]any, progress func(*mcp.ProgressNotificationParams)) (*mcp.CallToolResult, error) {
	b.mu.Lock()
	call := b.call
	b.mu.Unlock()
	return call(ctx, name, args, progress)
}

func (b *fakeBackend) Tools() []*mcp.Tool {
	if b.rt != nil {
		return b.rt.Tools()
	}
	return b.offered()
}

func (b *fakeBackend) ToolsFor(ctx context.Context) []*mcp.Tool {
	if b.rt != nil {
		return b.rt.ToolsFor(ctx)
	}
	return b.offered()
}

func (b *fakeBackend) Personal(ctx context.Context) bool { return b.rt != nil && b.rt.Personal(ctx) }

func (b *fakeBackend) CallTool(ctx context.Context, name string, args map[string]any, progress func(*mcp.ProgressNotificationParams)) (*mcp.CallToolResult, error) {
	if b.rt != nil {
		return b.rt.CallTool(ctx, name, args, progress)
	}
	return b.serve(ctx, name, args, progress)
}

func (b *fakeBackend) Resources() []*mcp.Resource {
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.Clone(b.resources)
}

func (b *fakeBackend) ReadResource(_ context.Context, uri string) (*mcp.ReadResourceResult, error) {
	return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: uri, Text: "contents of " + uri}, {URI: uri, Blob: []byte{1, 2, 3}}}}, nil
}

func (b *fakeBackend) Prompts() []*mcp.Prompt {
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.Clone(b.prompts)
}

func (b *fakeBackend) GetPrompt(_ context.Context, name string, args map[string]string) (*mcp.GetPromptResult, error) {
	return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: name + " for " + args["who"]}}}}, nil
}

// echoTool is a server tool as the router would expose it.
func echoTool(name string) *mcp.Tool {
	return &mcp.Tool{Name: name, Description: "Echo the message back", InputSchema: map[string]any{
		"type": "object", "properties": map[string]any{"message": map[string]any{"type": "string"}}, "required": []any{"message"},
	}}
}

// echo answers every call with its name and message.
func echo(_ context.Context, name string, args map[string]any, _ func(*mcp.ProgressNotificationParams)) (*mcp.CallToolResult, error) {
	msg, _ := args["message"].(string)
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: name + ": " + msg}}, StructuredContent: map[string]any{"echoed": msg}}, nil
}

// fakeStatuses is a StatusSource the test sets.
type fakeStatuses struct {
	mu sync.Mutex
	m  map[events.Key]statusync.Status
}

func (f *fakeStatuses) Get(k events.Key) (statusync.Status, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	st, ok := f.m[k.Canonical()]
	return st, ok
}

// harness serves an endpoint over real HTTP.
type harness struct {
	t         *testing.T
	srv       *Server
	url       string
	backend   *fakeBackend
	index     *resources.Index
	statuses  *fakeStatuses
	observed  map[events.Key]any
	events    *musterevents.Log
	bus       *bus.Bus
	reg       *prometheus.Registry
	http      *http.Client
	observeMu sync.Mutex
}

// setup is what a harness is made of: the endpoint's options, the core
// tools' and the router's further sources (after the fake servers).
type setup struct {
	Options
	core    coretools.Options
	sources []router.Source
}

func newHarness(t *testing.T, configure func(*setup)) *harness {
	t.Helper()
	h := &harness{
		t:        t,
		backend:  &fakeBackend{call: echo},
		index:    resources.New(),
		statuses: &fakeStatuses{m: map[events.Key]statusync.Status{}},
		observed: map[events.Key]any{},
		bus:      bus.New(bus.Options{Logger: quiet()}),
		reg:      prometheus.NewRegistry(),
	}
	// The real log of muster's events, on the harness's bus; a test that
	// publishes starts the bus.
	h.events = musterevents.NewLog(h.bus, musterevents.LogOptions{Translate: musterevents.Options{
		Status: func(k events.Key) (any, bool) {
			h.observeMu.Lock()
			defer h.observeMu.Unlock()
			st, ok := h.observed[k.Canonical()]
			return st, ok
		},
	}})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- h.events.Start(ctx) }()
	<-h.events.SubscriptionReady()
	t.Cleanup(func() { cancel(); <-done })
	opts := setup{
		Options: Options{Backend: h.backend, Version: "1.2.3", Registerer: h.reg, Logger: quiet()},
		core: coretools.Options{
			Index:    h.index,
			Statuses: h.statuses,
			ResourceStatus: func(k events.Key) (any, bool) {
				h.observeMu.Lock()
				defer h.observeMu.Unlock()
				st, ok := h.observed[k.Canonical()]
				return st, ok
			},
			ServerTools: func(k events.Key) []string {
				if k.Name == "fake" {
					return []string{"echo", "fail"}
				}
				return nil
			},
			Events: h.events,
			Logger: quiet(),
		},
	}
	if configure != nil {
		configure(&opts)
	}
	core, err := coretools.New(opts.core)
	require.NoError(t, err)
	h.backend.rt, err = router.New(router.Options{Catalogue: catalogue.New(catalogue.Options{}), Servers: noServers{}, Logger: quiet(),
		Core: core, Sources: append([]router.Source{fakeServers{h.backend}}, opts.sources...)})
	require.NoError(t, err)
	srv, err := New(opts.Options)
	require.NoError(t, err)
	h.srv = srv
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(ts.Close)
	h.url, h.http = ts.URL, ts.Client()
	return h
}

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// observe sets what ResourceStatus answers for key.
func (h *harness) observe(key events.Key, status any) {
	h.observeMu.Lock()
	defer h.observeMu.Unlock()
	h.observed[key.Canonical()] = status
}

// declare records a file's resources in the index, as the watcher would.
func (h *harness) declare(path, content string) {
	h.t.Helper()
	docs, err := v1alpha1.DecodeFile(path, []byte(content))
	idx := make([]resources.Doc, len(docs))
	for i, d := range docs {
		idx[i] = resources.Doc{Key: d.Key(), Object: d.Object, Hash: d.Hash, Err: d.Err}
	}
	kind := v1alpha1.KindMCPServer
	if strings.Contains(path, "workflows") {
		kind = v1alpha1.KindWorkflow
	}
	h.index.SetFile(path, idx, err, events.NewKey(kind, "", strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))))
}

// connect starts a go-sdk client session on path (PathSSE over SSE,
// others streamable), at protocol version ("": the client's default, the
// newest it knows).
func (h *harness) connect(path, version string, opts *mcp.ClientOptions) *mcp.ClientSession {
	h.t.Helper()
	return h.connectWith(h.http, path, version, opts)
}

func (h *harness) connectWith(hc *http.Client, path, version string, opts *mcp.ClientOptions) *mcp.ClientSession {
	h.t.Helper()
	c := mcp.NewClient(&mcp.Implementation{Name: "test-client", Version: "0"}, opts)
	var transport mcp.Transport = &mcp.StreamableClientTransport{Endpoint: h.url + path, HTTPClient: hc}
	if path == PathSSE {
		transport = &mcp.SSEClientTransport{Endpoint: h.url + path, HTTPClient: hc}
	}
	cs, err := c.Connect(context.Background(), transport, &mcp.ClientSessionOptions{ProtocolVersion: version})
	require.NoError(h.t, err, "connecting to %s at %q", path, version)
	h.t.Cleanup(func() { _ = cs.Close() })
	return cs
}

// call calls tool on cs and returns its result.
func call(t *testing.T, cs *mcp.ClientSession, tool string, args map[string]any) *mcp.CallToolResult {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: tool, Arguments: args})
	require.NoError(t, err, tool)
	return res
}

// text returns the result's only item's text.
func text(t *testing.T, res *mcp.CallToolResult) string {
	t.Helper()
	require.Len(t, res.Content, 1)
	tc, ok := res.Content[0].(*mcp.TextContent)
	require.True(t, ok, "content is %T", res.Content[0])
	return tc.Text
}

// decode unmarshals the result's text into a value of type T.
func decode[T any](t *testing.T, res *mcp.CallToolResult) T {
	t.Helper()
	require.False(t, res.IsError, "tool failed: %s", text(t, res))
	var v T
	require.NoError(t, json.Unmarshal([]byte(text(t, res)), &v), text(t, res))
	return v
}

// counter reads a counter of the harness's registry.
func (h *harness) counter(c prometheus.Collector) float64 { return testutil.ToFloat64(c) }

// muster's protocol version: its CLI and agent initialize with it.
const musterProtocol = "2024-11-05"

func jsonUnmarshal(s string, v any) error { return json.Unmarshal([]byte(s), v) }
