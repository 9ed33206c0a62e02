package router_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/musterd/musterd/internal/mcpfake"
	"github.com/musterd/musterd/internal/npmtest"
	"github.com/musterd/musterd/pkg/apis/muster/v1alpha1"
	"github.com/musterd/musterd/pkg/bus"
	"github.com/musterd/musterd/pkg/catalogue"
	"github.com/musterd/musterd/pkg/events"
	"github.com/musterd/musterd/pkg/resources"
	"github.com/musterd/musterd/pkg/router"
	"github.com/musterd/musterd/pkg/supervisor"
	"github.com/musterd/musterd/pkg/watchers/supervised"
)

// fakeBin is cmd/mcp-fake, built once for the tests.
var fakeBin string

func TestMain(m *testing.M) { mcpfake.Main(m, &fakeBin) }

// deadline bounds every wait on a real process: generous, for a loaded
// 2-core machine running the race detector.
const deadline = 20 * time.Second

func key(name string) events.Key { return events.NewKey("MCPServer", "", name) }

func jsonOf(v any) string {
	data, err := json.Marshal(v)
	if err != nil {
		return "(unencodable)"
	}
	return string(data)
}

func fake(args ...string) v1alpha1.MCPServerSpec {
	return v1alpha1.MCPServerSpec{Type: v1alpha1.MCPServerTypeStdio, Command: fakeBin, Args: args, Timeout: 20}
}

// rig is the runtime half of the daemon as it is wired: the supervisor
// reports to the runtime bridge, which keeps the catalogue, which the
// router reads; the router calls through the supervisor.
type rig struct {
	sup *supervisor.Supervisor
	cat *catalogue.Catalogue
	r   *router.Router
	reg *prometheus.Registry
}

func newRig(t *testing.T, opts supervisor.Options) *rig {
	t.Helper()
	discard := slog.New(slog.DiscardHandler)
	cat := catalogue.New(catalogue.Options{})
	br, err := supervised.New(bus.New(bus.Options{Logger: discard}), supervised.Options{Index: resources.New(), Catalogue: cat, Logger: discard})
	require.NoError(t, err)
	opts.OnChangeSync = br.OnChange
	opts.Logger = discard
	sup := supervisor.New(opts)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), deadline)
		defer cancel()
		require.NoError(t, sup.Shutdown(ctx))
	})
	reg := prometheus.NewRegistry()
	r, err := router.New(router.Options{Catalogue: cat, Servers: sup, Registerer: reg, Logger: discard})
	require.NoError(t, err)
	return &rig{sup: sup, cat: cat, r: r, reg: reg}
}

func (g *rig) ensure(t *testing.T, k events.Key, spec v1alpha1.MCPServerSpec) supervisor.Observed {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), deadline)
	defer cancel()
	_, err := g.sup.Ensure(ctx, k, spec)
	require.NoError(t, err)
	obs, _, err := g.sup.Wait(ctx, k) // the start runs on the supervisor's goroutine
	require.NoError(t, err)
	return obs
}

func (g *rig) names() []string {
	var names []string
	for _, tool := range g.r.Tools() {
		names = append(names, tool.Name)
	}
	return names
}

func callCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), deadline)
	t.Cleanup(cancel)
	return ctx
}

func firstText(t *testing.T, res *mcp.CallToolResult) string {
	t.Helper()
	require.NotNil(t, res)
	require.NotEmpty(t, res.Content)
	tc, ok := res.Content[0].(*mcp.TextContent)
	require.True(t, ok, "content %T", res.Content[0])
	return tc.Text
}

func TestToolsAreRoutedToTheServersThatOfferThem(t *testing.T) {
	t.Parallel()
	g := newRig(t, supervisor.Options{})
	g.ensure(t, key("alpha"), fake("-tools", "echo,alpha_shout"))
	beta := fake("-tools", "echo")
	beta.ToolPrefix = "b"
	g.ensure(t, key("beta"), beta)

	assert.Equal(t, []string{"x_alpha_echo", "x_alpha_shout", "x_b_echo"}, g.names(),
		"muster's names, sorted; alpha's prefix is not repeated")
	def := g.r.Tools()[0]
	assert.Equal(t, "echoes its arguments as text", def.Description, "the server's definition")

	res, err := g.r.CallTool(callCtx(t), "x_b_echo", map[string]any{"a": 1}, nil)
	require.NoError(t, err)
	assert.Equal(t, `echo {"a":1}`, firstText(t, res))
	res, err = g.r.CallTool(callCtx(t), "x_alpha_shout", nil, nil)
	require.NoError(t, err)
	assert.Equal(t, `alpha_shout {}`, firstText(t, res), "called by the server's own name")

	require.NoError(t, g.sup.Stop(t.Context(), key("beta")))
	_, err = g.r.CallTool(callCtx(t), "x_b_echo", nil, nil)
	require.ErrorIs(t, err, supervisor.ErrNotRunning, "a tool whose server stopped fails at once, naming the server")
	assert.EqualError(t, err, "server not found: beta: tool \"x_b_echo\": mcp server MCPServer/default/beta is not running (state Stopped)",
		"muster's words, and the server and its state")
	assert.True(t, g.r.Claims("x_b_echo"), "claimed, so that the endpoint routes it here")
	assert.False(t, g.r.Claims("x_alpha_echo"), "a tool on offer is listed, not claimed")
	_, err = g.r.CallTool(callCtx(t), "x_nobody_echo", nil, nil)
	require.ErrorIs(t, err, catalogue.ErrUnknownTool, "a tool nobody offered fails at once, naming it")
	assert.ErrorContains(t, err, `"x_nobody_echo"`)
	assert.False(t, g.r.Claims("x_nobody_echo"))
	assert.Equal(t, []string{"x_alpha_echo", "x_alpha_shout"}, g.names())
	assert.Equal(t, 1.0, counter(t, g.reg, "beta", "x_b_echo", "success"))
}

func TestAFamilyToolIsRoutedByItsInstanceArgument(t *testing.T) {
	t.Parallel()
	g := newRig(t, supervisor.Options{})
	member := func() v1alpha1.MCPServerSpec {
		spec := fake("-tools", "echo", "-slow-tool", "slow")
		spec.Family = &v1alpha1.MCPServerFamily{Name: "k8s", InstanceArg: "cluster"}
		return spec
	}
	a := g.ensure(t, key("mc-a"), member())
	b := g.ensure(t, key("mc-b"), member())

	assert.Equal(t, []string{"x_k8s_echo", "x_k8s_slow", "x_k8s_slow_cancelled"}, g.names(), "one tool per name for the family")
	schema := map[string]any{}
	require.NoError(t, json.Unmarshal([]byte(jsonOf(g.r.Tools()[0].InputSchema)), &schema))
	assert.Equal(t, []any{"cluster"}, schema["required"])
	assert.Equal(t, []any{"mc-a", "mc-b"}, schema["properties"].(map[string]any)["cluster"].(map[string]any)["enum"])

	res, err := g.r.CallTool(callCtx(t), "x_k8s_echo", map[string]any{"cluster": "mc-b", "x": 1}, nil)
	require.NoError(t, err)
	assert.Equal(t, `echo {"x":1}`, firstText(t, res), "the instance argument is removed before forwarding")
	for _, m := range []struct {
		name string
		pid  int
	}{{"mc-a", a.PID}, {"mc-b", b.PID}} {
		res, err := g.r.CallTool(callCtx(t), "x_k8s_slow", map[string]any{"cluster": m.name, "steps": 1, "interval": "1ms"}, nil)
		require.NoError(t, err)
		assert.Equal(t, float64(m.pid), res.StructuredContent.(map[string]any)["pid"], "served by %s", m.name)
	}

	_, err = g.r.CallTool(callCtx(t), "x_k8s_echo", map[string]any{"x": 1}, nil)
	require.Error(t, err)
	assert.EqualError(t, err, `tool x_k8s_echo is provided by a family on servers mc-a, mc-b; the "cluster" parameter is required`)

	require.NoError(t, g.sup.Stop(t.Context(), key("mc-b")))
	_, err = g.r.CallTool(callCtx(t), "x_k8s_echo", map[string]any{"cluster": "mc-b"}, nil)
	require.Error(t, err)
	assert.EqualError(t, err, `tool x_k8s_echo is not available on server "mc-b" (available: mc-a)`,
		"a stopped member is rejected with muster's text, naming the members that run")
}

// TestWatchersAreToldOfEveryChangeOfTheTools: a start, a server's own
// tools/list_changed, a stop.
func TestWatchersAreToldOfEveryChangeOfTheTools(t *testing.T) {
	t.Parallel()
	g := newRig(t, supervisor.Options{})
	var (
		mu   sync.Mutex
		seen [][]string
	)
	g.r.OnChange(func() {
		names := g.names()
		mu.Lock()
		defer mu.Unlock()
		seen = append(seen, names)
	})
	told := func(names ...string) {
		t.Helper()
		require.EventuallyWithT(t, func(c *assert.CollectT) {
			mu.Lock()
			defer mu.Unlock()
			require.NotEmpty(c, seen)
			assert.Equal(c, names, seen[len(seen)-1])
		}, deadline, 5*time.Millisecond)
	}

	first := g.ensure(t, key("late"), fake("-add-tool-after", "300ms"))
	assert.Equal(t, []string{"echo"}, first.Tools)
	told("x_late_echo", "x_late_late") // the server's own list_changed, listed again
	servers := g.cat.Servers()
	require.Len(t, servers, 1)
	assert.True(t, servers[0].ListedAt.After(first.ListedAt), "listed again")
	n, err := testutil.GatherAndCount(g.reg, "musterd_mcp_catalogue_age_seconds")
	require.NoError(t, err)
	assert.Equal(t, 1, n)

	require.NoError(t, g.sup.Stop(t.Context(), key("late")))
	told()
}

// TestContentPassesThroughUnchanged compares what the router returns with
// what a Go SDK client of the npm server-everything gets itself: text,
// image, resource links, embedded resources, structuredContent, isError.
func TestContentPassesThroughUnchanged(t *testing.T) {
	t.Parallel()
	bin := npmtest.ServerEverything(t)
	g := newRig(t, supervisor.Options{})
	g.ensure(t, key("everything"), v1alpha1.MCPServerSpec{Type: v1alpha1.MCPServerTypeStdio, Command: bin, Args: []string{"stdio"}, Timeout: 30})

	client := mcp.NewClient(&mcp.Implementation{Name: "direct", Version: "v1"}, nil)
	session, err := client.Connect(callCtx(t), &mcp.CommandTransport{Command: exec.Command(bin, "stdio")}, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = session.Close() })

	for _, c := range []struct {
		tool string
		args map[string]any
	}{
		{"get-tiny-image", map[string]any{}},
		{"get-resource-links", map[string]any{"count": 3}},
		{"get-resource-reference", map[string]any{"resourceType": "Text", "resourceId": 2}},
		{"get-structured-content", map[string]any{"location": "Chicago"}},
		{"get-sum", map[string]any{"a": "not a number"}},
	} {
		direct, err := session.CallTool(callCtx(t), &mcp.CallToolParams{Name: c.tool, Arguments: c.args})
		require.NoError(t, err, c.tool)
		routed, err := g.r.CallTool(callCtx(t), "x_everything_"+c.tool, c.args, nil)
		require.NoError(t, err, c.tool)
		assert.JSONEq(t, jsonOf(direct), jsonOf(routed), c.tool)
		if c.tool == "get-sum" {
			assert.True(t, routed.IsError, "a tool-level failure is a result with isError")
		}
	}
}

func TestResourcesAndPromptsOfRealServers(t *testing.T) {
	t.Parallel()
	bin := npmtest.ServerEverything(t)
	g := newRig(t, supervisor.Options{})
	g.ensure(t, key("everything"), v1alpha1.MCPServerSpec{Type: v1alpha1.MCPServerTypeStdio, Command: bin, Args: []string{"stdio"}, Timeout: 30})
	g.ensure(t, key("plain"), fake())

	// Listed in the background once the servers run.
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		assert.NotEmpty(c, g.r.Resources())
		assert.NotEmpty(c, g.r.ResourceTemplates())
		assert.NotEmpty(c, g.r.Prompts())
	}, deadline, 10*time.Millisecond)
	resources := g.r.Resources()
	assert.True(t, slices.IsSortedFunc(resources, func(a, b *mcp.Resource) int { return strings.Compare(a.URI, b.URI) }))
	read, err := g.r.ReadResource(callCtx(t), resources[0].URI)
	require.NoError(t, err)
	require.NotEmpty(t, read.Contents)
	assert.Equal(t, resources[0].URI, read.Contents[0].URI, "a URI with a scheme is exposed unchanged")

	var simple string
	for _, p := range g.r.Prompts() {
		assert.True(t, strings.HasPrefix(p.Name, "x_everything_"), p.Name)
		if len(p.Arguments) == 0 && simple == "" {
			simple = p.Name
		}
	}
	require.NotEmpty(t, simple)
	got, err := g.r.GetPrompt(callCtx(t), simple, nil)
	require.NoError(t, err)
	assert.NotEmpty(t, got.Messages)

	require.NoError(t, g.sup.Stop(t.Context(), key("everything")))
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		assert.Empty(c, g.r.Resources())
		assert.Empty(c, g.r.Prompts())
	}, deadline, 10*time.Millisecond, "a server stopped takes its resources and prompts along")
}

// TestCallsThroughTheRouterDuringASpecChangeRestart: twenty calls in
// flight finish on the old server; none fails, none hangs.
func TestCallsThroughTheRouterDuringASpecChangeRestart(t *testing.T) {
	t.Parallel()
	g := newRig(t, supervisor.Options{})
	old := g.ensure(t, key("drain"), fake("-slow-tool", "slow"))
	const calls = 20
	pids := make(chan any, calls)
	errs := make(chan error, calls)
	for range calls {
		go func() {
			res, err := g.r.CallTool(callCtx(t), "x_drain_slow", map[string]any{"steps": 10, "interval": "30ms"}, nil)
			if err != nil {
				errs <- err
				return
			}
			pids <- res.StructuredContent.(map[string]any)["pid"]
		}()
	}
	require.Eventually(t, func() bool { return g.sup.InFlight(key("drain")) == calls }, deadline, time.Millisecond)
	g.ensure(t, key("drain"), fake("-slow-tool", "slow", "-tools", "echo,added"))
	for range calls {
		select {
		case pid := <-pids:
			assert.Equal(t, float64(old.PID), pid)
		case err := <-errs:
			t.Errorf("a call failed: %v", err)
		case <-time.After(deadline):
			t.Fatal("a call hangs")
		}
	}
	assert.Contains(t, g.names(), "x_drain_added")
	assert.Equal(t, float64(calls), counter(t, g.reg, "drain", "x_drain_slow", "success"))
}
