package router_test

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/musterd/musterd/pkg/catalogue"
	"github.com/musterd/musterd/pkg/events"
	"github.com/musterd/musterd/pkg/router"
	"github.com/musterd/musterd/pkg/supervisor"
)

// fakeServers is a one-component fake of the supervisor's calls, for the
// router's own mechanisms; the real supervisor is in router_test.go.
type fakeServers struct {
	mu        sync.Mutex
	calls     []string // "key tool args"
	result    *mcp.CallToolResult
	err       error
	resources map[events.Key][]*mcp.Resource
	templates map[events.Key][]*mcp.ResourceTemplate
	prompts   map[events.Key][]*mcp.Prompt
	reads     []string // "key uri"
	gets      []string // "key name"
	watch     func(events.Key)
}

// WatchLists makes the fake a list watcher, as the supervisor is.
func (f *fakeServers) WatchLists(fn func(events.Key)) func() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.watch = fn
	return func() {}
}

// setPrompts changes a server's prompts, as a server that then says so.
func (f *fakeServers) setPrompts(key events.Key, prompts ...*mcp.Prompt) {
	f.mu.Lock()
	f.prompts[key] = prompts
	watch := f.watch
	f.mu.Unlock()
	watch(key)
}

func (f *fakeServers) CallTool(_ context.Context, key events.Key, p *mcp.CallToolParams, _ func(*mcp.ProgressNotificationParams)) (*mcp.CallToolResult, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, key.Name+" "+p.Name+" "+jsonOf(p.Arguments))
	return f.result, f.err
}

func (f *fakeServers) ListResources(_ context.Context, key events.Key) ([]*mcp.Resource, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.resources[key], nil
}

func (f *fakeServers) ListResourceTemplates(_ context.Context, key events.Key) ([]*mcp.ResourceTemplate, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.templates[key], nil
}

func (f *fakeServers) ReadResource(_ context.Context, key events.Key, p *mcp.ReadResourceParams) (*mcp.ReadResourceResult, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.reads = append(f.reads, key.Name+" "+p.URI)
	return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: p.URI, Text: "content"}}}, nil
}

func (f *fakeServers) ListPrompts(_ context.Context, key events.Key) ([]*mcp.Prompt, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.prompts[key], nil
}

func (f *fakeServers) GetPrompt(_ context.Context, key events.Key, p *mcp.GetPromptParams) (*mcp.GetPromptResult, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.gets = append(f.gets, key.Name+" "+p.Name+" "+jsonOf(p.Arguments))
	return &mcp.GetPromptResult{Description: "got"}, nil
}

func newUnit(t *testing.T, f *fakeServers, now func() time.Time) (*router.Router, *catalogue.Catalogue, *prometheus.Registry) {
	t.Helper()
	cat := catalogue.New(catalogue.Options{})
	reg := prometheus.NewRegistry()
	r, err := router.New(router.Options{Catalogue: cat, Servers: f, Registerer: reg, Now: now, Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	return r, cat, reg
}

func defs(names ...string) []*mcp.Tool {
	var out []*mcp.Tool
	for _, n := range names {
		out = append(out, &mcp.Tool{Name: n, Description: "does " + n, InputSchema: map[string]any{"type": "object"}})
	}
	return out
}

func TestNewRequiresItsParts(t *testing.T) {
	_, err := router.New(router.Options{Servers: &fakeServers{}})
	assert.ErrorContains(t, err, "Options.Catalogue is required")
	_, err = router.New(router.Options{Catalogue: catalogue.New(catalogue.Options{})})
	assert.ErrorContains(t, err, "Options.Servers is required")

	reg := prometheus.NewRegistry()
	cat := catalogue.New(catalogue.Options{})
	_, err = router.New(router.Options{Catalogue: cat, Servers: &fakeServers{}, Registerer: reg})
	require.NoError(t, err)
	_, err = router.New(router.Options{Catalogue: cat, Servers: &fakeServers{}, Registerer: reg})
	assert.Error(t, err, "the metrics are registered already")
}

func TestCallsCountPerRealToolWithTheirResult(t *testing.T) {
	f := &fakeServers{result: &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ok"}}}}
	r, cat, reg := newUnit(t, f, nil)
	cat.Update(key("echo"), catalogue.Naming{}, defs("echo"), time.Time{})
	cat.Update(key("mc-a"), catalogue.Naming{Family: "k8s", InstanceArg: "cluster"}, defs("get"), time.Time{})
	cat.Update(events.NewKey("MCPServer", "team", "mc-b"), catalogue.Naming{Family: "k8s", InstanceArg: "cluster"}, defs("get"), time.Time{})

	res, err := r.CallTool(t.Context(), "x_echo_echo", map[string]any{"a": 1}, nil)
	require.NoError(t, err)
	assert.Same(t, f.result, res, "the server's result, unchanged")

	f.result = &mcp.CallToolResult{IsError: true}
	_, err = r.CallTool(t.Context(), "x_k8s_get", map[string]any{"cluster": "mc-b", "ns": "x"}, nil)
	require.NoError(t, err)
	f.result, f.err = nil, &supervisor.ServerError{Key: key("mc-a"), State: "Failed", Err: supervisor.ErrDied}
	_, err = r.CallTool(t.Context(), "x_k8s_get", map[string]any{"cluster": "mc-a"}, nil)
	require.ErrorIs(t, err, supervisor.ErrDied)

	_, err = r.CallTool(t.Context(), "x_gone", nil, nil)
	require.ErrorIs(t, err, catalogue.ErrUnknownTool)
	_, err = r.CallTool(t.Context(), "x_k8s_get", map[string]any{}, nil)
	require.ErrorContains(t, err, `the "cluster" parameter is required`)

	assert.Equal(t, []string{`echo echo {"a":1}`, `mc-b get {"ns":"x"}`, `mc-a get {}`}, f.calls,
		"routed by instance, the argument removed; refused calls reach no server")
	assert.Equal(t, 1.0, counter(t, reg, "echo", "x_echo_echo", "success"))
	assert.Equal(t, 1.0, counter(t, reg, "team/mc-b", "x_k8s_get", "tool_error"))
	assert.Equal(t, 1.0, counter(t, reg, "mc-a", "x_k8s_get", "error"))
	n, err := testutil.GatherAndCount(reg, "musterd_mcp_tool_calls_total")
	require.NoError(t, err)
	assert.Equal(t, 3, n, "refused calls are not counted against a server")
	n, err = testutil.GatherAndCount(reg, "musterd_mcp_tool_call_duration_seconds")
	require.NoError(t, err)
	assert.Equal(t, 3, n)
}

// counter reads one series of musterd_mcp_tool_calls_total.
func counter(t *testing.T, reg *prometheus.Registry, server, tool, result string) float64 {
	t.Helper()
	families, err := reg.Gather()
	require.NoError(t, err)
	for _, mf := range families {
		if mf.GetName() != "musterd_mcp_tool_calls_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["server"] == server && labels["tool"] == tool && labels["result"] == result {
				return m.GetCounter().GetValue()
			}
		}
	}
	t.Fatalf("no musterd_mcp_tool_calls_total{server=%q,tool=%q,result=%q}", server, tool, result)
	return 0
}

func TestTheCatalogueAgeIsTheTimeSinceEachServerLastListed(t *testing.T) {
	listed := time.Date(2026, 11, 24, 13, 0, 0, 0, time.UTC)
	now := listed.Add(90 * time.Second)
	_, cat, reg := newUnit(t, &fakeServers{}, func() time.Time { return now })
	cat.Update(key("echo"), catalogue.Naming{}, defs("echo"), listed)
	cat.Update(key("late"), catalogue.Naming{}, nil, listed.Add(80*time.Second))
	require.NoError(t, testutil.GatherAndCompare(reg, strings.NewReader(`
# HELP musterd_mcp_catalogue_age_seconds Seconds since each running MCP server's tools were last listed (at its start or after its tools/list_changed).
# TYPE musterd_mcp_catalogue_age_seconds gauge
musterd_mcp_catalogue_age_seconds{server="echo"} 90
musterd_mcp_catalogue_age_seconds{server="late"} 10
`), "musterd_mcp_catalogue_age_seconds"))
	cat.Remove(key("echo"))
	n, err := testutil.GatherAndCount(reg, "musterd_mcp_catalogue_age_seconds")
	require.NoError(t, err)
	assert.Equal(t, 1, n, "a server gone has no age")
}

// TestOnChangeIsToldAfterEachChangeAndCoalescesWhileBusy: a watcher is
// called after the catalogue changed, with the change in Tools(); changes
// made while it runs come as one more call.
func TestOnChangeIsToldAfterEachChangeAndCoalescesWhileBusy(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r, cat, _ := newUnit(t, &fakeServers{}, nil)
		release := make(chan struct{})
		var (
			mu   sync.Mutex
			seen [][]string
		)
		cancel := r.OnChange(func() {
			var names []string
			for _, tool := range r.Tools() {
				names = append(names, tool.Name)
			}
			mu.Lock()
			seen = append(seen, names)
			mu.Unlock()
			<-release
		})
		seenNow := func() [][]string {
			mu.Lock()
			defer mu.Unlock()
			return append([][]string(nil), seen...)
		}

		cat.Update(key("a"), catalogue.Naming{}, defs("t"), time.Time{})
		synctest.Wait()
		assert.Equal(t, [][]string{{"x_a_t"}}, seenNow(), "told once, the change in Tools()")

		cat.Update(key("b"), catalogue.Naming{}, defs("t"), time.Time{})
		cat.Update(key("c"), catalogue.Naming{}, defs("t"), time.Time{})
		cat.Update(key("c"), catalogue.Naming{}, defs("t"), time.Time{}) // no change: nothing to tell
		synctest.Wait()
		assert.Len(t, seenNow(), 1, "the watcher is busy: nothing is called beside it")
		release <- struct{}{}
		synctest.Wait()
		assert.Equal(t, [][]string{{"x_a_t"}, {"x_a_t", "x_b_t", "x_c_t"}}, seenNow(), "two changes, one more call, both in it")
		release <- struct{}{}
		synctest.Wait()

		cancel()
		cat.Remove(key("a"))
		synctest.Wait()
		assert.Len(t, seenNow(), 2, "no calls after cancel")
	})
}

func TestResourcesAndPromptsFollowMustersNaming(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		notes, mem := key("notes"), key("mem")
		f := &fakeServers{
			resources: map[events.Key][]*mcp.Resource{
				notes: {{URI: "todo", Name: "todo"}, {URI: "file:///shared", Name: "shared"}},
				mem:   {{URI: "file:///shared", Name: "mem's"}, {URI: "mem://1", Name: "one"}},
			},
			templates: map[events.Key][]*mcp.ResourceTemplate{
				notes: {{URITemplate: "note/{id}", Name: "note"}},
				mem:   {{URITemplate: "mem://{id}", Name: "cell"}},
			},
			prompts: map[events.Key][]*mcp.Prompt{
				notes: {{Name: "summarise"}, {Name: "notes_review"}},
				mem:   {{Name: "summarise"}},
			},
		}
		r, cat, _ := newUnit(t, f, nil)
		told := 0
		r.OnChange(func() { told++ })
		cat.Update(notes, catalogue.Naming{}, nil, time.Time{})
		cat.Update(mem, catalogue.Naming{ToolPrefix: "m"}, nil, time.Time{})
		synctest.Wait() // the background listings
		assert.Positive(t, told, "watchers are told of new resources and prompts")

		var uris []string
		for _, res := range r.Resources() {
			uris = append(uris, res.URI+" "+res.Name)
		}
		assert.Equal(t, []string{"file:///shared mem's", "mem://1 one", "x_notes_todo todo"}, uris,
			"sorted; a URI with a scheme is its own name and the first server's by key; others are prefixed")
		assert.Equal(t, "todo", f.resources[notes][0].URI, "the servers' listings are not changed")

		templates := r.ResourceTemplates()
		require.Len(t, templates, 2)
		assert.Equal(t, "mem://{id}", templates[0].URITemplate)
		assert.Equal(t, "x_notes_note/{id}", templates[1].URITemplate)

		for _, uri := range []string{"x_notes_todo", "file:///shared", "mem://7", "x_notes_note/42"} {
			_, err := r.ReadResource(t.Context(), uri)
			require.NoError(t, err, uri)
		}
		assert.Equal(t, []string{"notes todo", "mem file:///shared", "mem mem://7", "notes note/42"}, f.reads,
			"listed ones by their route; others by a matching template")
		_, err := r.ReadResource(t.Context(), "x_notes_nothing")
		require.ErrorIs(t, err, router.ErrUnknownResource)
		assert.ErrorContains(t, err, "x_notes_nothing")

		var names []string
		for _, p := range r.Prompts() {
			names = append(names, p.Name)
		}
		assert.Equal(t, []string{"x_m_summarise", "x_notes_review", "x_notes_summarise"}, names, "sorted; the server's prefix is not repeated")
		_, err = r.GetPrompt(t.Context(), "x_notes_review", map[string]string{"since": "monday"})
		require.NoError(t, err)
		_, err = r.GetPrompt(t.Context(), "x_m_summarise", nil)
		require.NoError(t, err)
		assert.Equal(t, []string{`notes notes_review {"since":"monday"}`, "mem summarise null"}, f.gets)
		_, err = r.GetPrompt(t.Context(), "x_m_nothing", nil)
		require.ErrorIs(t, err, router.ErrUnknownPrompt)

		cat.Remove(mem)
		synctest.Wait()
		assert.Len(t, r.Prompts(), 2, "a server gone takes its prompts along")
		assert.Len(t, r.Resources(), 2)
	})
}

// TestAServersOwnListChangedIsListedAgain: the supervisor's WatchLists
// says a server's prompts changed; the router lists them again and tells
// its watchers.
func TestAServersOwnListChangedIsListedAgain(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a := key("a")
		f := &fakeServers{prompts: map[events.Key][]*mcp.Prompt{a: {{Name: "p"}}}}
		r, cat, _ := newUnit(t, f, nil)
		cat.Update(a, catalogue.Naming{}, defs("t"), time.Time{})
		synctest.Wait()
		told := 0
		r.OnChange(func() { told++ })
		require.Len(t, r.Prompts(), 1)

		f.setPrompts(a, &mcp.Prompt{Name: "p"}, &mcp.Prompt{Name: "q"})
		synctest.Wait()
		assert.Equal(t, 1, told)
		require.Len(t, r.Prompts(), 2)
		assert.Equal(t, "x_a_q", r.Prompts()[1].Name)

		f.setPrompts(a, &mcp.Prompt{Name: "p"}, &mcp.Prompt{Name: "q"})
		synctest.Wait()
		assert.Equal(t, 1, told, "listed again, nothing changed: nobody is told")
	})
}

// TestAPromptNotYetListedIsFoundByListingAgain: a get of a name the
// background listing has not seen lists every server first.
func TestAPromptNotYetListedIsFoundByListingAgain(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a := key("a")
		f := &fakeServers{prompts: map[events.Key][]*mcp.Prompt{a: {{Name: "p"}}}}
		r, cat, _ := newUnit(t, f, nil)
		cat.Update(a, catalogue.Naming{}, defs("t"), time.Time{})
		synctest.Wait()

		f.mu.Lock()
		f.prompts[a] = append(f.prompts[a], &mcp.Prompt{Name: "unannounced"})
		f.mu.Unlock()
		_, err := r.GetPrompt(t.Context(), "x_a_unannounced", nil)
		require.NoError(t, err)
		assert.Equal(t, []string{"a unannounced null"}, f.gets)
		_, err = r.GetPrompt(t.Context(), "x_nobody_p", nil)
		assert.ErrorIs(t, err, router.ErrUnknownPrompt)
	})
}

// The router's debug line of a call redacts its arguments and its error,
// as mcpserve's does: a server's error may quote what it was given.
func TestTheDebugLogOfACallIsRedacted(t *testing.T) {
	var buf strings.Builder
	var mu sync.Mutex
	log := slog.New(slog.NewTextHandler(lockedWriter{&mu, &buf}, &slog.HandlerOptions{Level: slog.LevelDebug}))
	f := &fakeServers{err: errors.New(`upstream refused password=hunter2 at https://deploy:s3cret@example.com/x`)}
	cat := catalogue.New(catalogue.Options{})
	r, err := router.New(router.Options{Catalogue: cat, Servers: f, Registerer: prometheus.NewRegistry(), Logger: log})
	require.NoError(t, err)
	cat.Update(key("echo"), catalogue.Naming{}, defs("echo"), time.Time{})
	_, err = r.CallTool(t.Context(), "x_echo_echo", map[string]any{"token": "sk-live-123", "q": "ok"}, nil)
	require.Error(t, err)
	_, err = r.CallTool(t.Context(), "x_nope", map[string]any{"api_key": "k-999"}, nil)
	require.Error(t, err)
	mu.Lock()
	out := buf.String()
	mu.Unlock()
	assert.Contains(t, out, "mcp tool call")
	for _, secret := range []string{"hunter2", "s3cret", "sk-live-123", "k-999"} {
		assert.NotContains(t, out, secret)
	}
	assert.Contains(t, out, "password=[redacted]")
}

type lockedWriter struct {
	mu *sync.Mutex
	w  *strings.Builder
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
