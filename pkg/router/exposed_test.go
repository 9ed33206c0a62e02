package router

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/musterd/musterd/pkg/apis/muster/v1alpha1"
	"github.com/musterd/musterd/pkg/catalogue"
	"github.com/musterd/musterd/pkg/events"
	"github.com/musterd/musterd/pkg/supervisor"
)

// fixedSource offers the tools the test sets, and answers every call with
// the tool's name.
type fixedSource struct{ tools []*mcp.Tool }

func (f *fixedSource) Tools() []*mcp.Tool { return f.tools }

func (f *fixedSource) CallTool(_ context.Context, name string, _ map[string]any, _ func(*mcp.ProgressNotificationParams)) (*mcp.CallToolResult, error) {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: name}}}, nil
}

// noServers is a supervisor that runs none.
type noServers struct{ Servers }

func newBareRouter(t *testing.T, core Source, sources ...Source) *Router {
	t.Helper()
	r, err := New(Options{Catalogue: catalogue.New(catalogue.Options{}), Servers: noServers{}, Core: core, Sources: sources,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	require.NoError(t, err)
	return r
}

// A Tools after which every source offers the very tools it offered keeps
// the exposed set as it is, without building it again; a tool replaced in
// place of a source's list, or a list of the same tools in a new slice, is
// still told apart.
func TestToolsKeepsTheExposedSetWhileNoSourceOffersAnotherTool(t *testing.T) {
	greet := &mcp.Tool{Name: "workflow_greet", Description: "Say hello", InputSchema: map[string]any{"type": "object"}}
	wf := &fixedSource{tools: []*mcp.Tool{greet}}
	r := newBareRouter(t, nil, wf)
	require.Len(t, r.Tools(), 1)
	set := r.exposed.Load()

	r.Tools()
	assert.Same(t, set, r.exposed.Load(), "nothing offered changed: the set is kept")
	wf.tools = []*mcp.Tool{greet}
	r.Tools()
	assert.Same(t, set, r.exposed.Load(), "the same tools in another slice")

	wf.tools[0] = &mcp.Tool{Name: "workflow_greet", Description: "Say hi", InputSchema: map[string]any{"type": "object"}}
	r.Tools()
	assert.NotSame(t, set, r.exposed.Load(), "a tool replaced in place")
	assert.Equal(t, "Say hi", r.exposed.Load().routes["workflow_greet"].tool.Description)
}

// The core tools come first: a later source offering a core tool's name
// is skipped, and calls of the name reach the core tool.
func TestTheFirstSourceToOfferANameServesIt(t *testing.T) {
	core := &fixedSource{tools: []*mcp.Tool{{Name: "core_service_list", InputSchema: map[string]any{"type": "object"}}}}
	wf := &fixedSource{tools: []*mcp.Tool{{Name: "core_service_list", Description: "impostor"}, {Name: "workflow_a"}}}
	r := newBareRouter(t, core, wf)
	tools := r.Tools()
	require.Len(t, tools, 2)
	assert.Same(t, core.tools[0], tools[0])
	assert.Equal(t, "core", r.exposed.Load().routes["core_service_list"].label)
}

// A tool a source offers is callable at once, before anyone listed the
// exposed set again.
func TestANewToolIsCallableBeforeTheNextListing(t *testing.T) {
	wf := &fixedSource{}
	r := newBareRouter(t, nil, wf)
	r.Tools()
	wf.tools = []*mcp.Tool{{Name: "workflow_new"}}
	res, err := r.CallTool(t.Context(), "workflow_new", nil, nil)
	require.NoError(t, err)
	assert.Equal(t, "workflow_new", res.Content[0].(*mcp.TextContent).Text)
	_, err = r.CallTool(t.Context(), "workflow_none", nil, nil)
	assert.ErrorIs(t, err, ErrUnknownTool)
	assert.ErrorIs(t, err, catalogue.ErrUnknownTool)
	assert.EqualError(t, err, `unknown tool "workflow_none": tool not found: no core tool, running server or workflow offers it`)
}

// A call carries its caller: the one the endpoint put in its context, or
// a new one with a correlation ID.
func TestACallCarriesItsCaller(t *testing.T) {
	var seen Caller
	src := &callerSource{seen: &seen}
	r := newBareRouter(t, src)
	_, err := r.CallTool(t.Context(), "core_who", nil, nil)
	require.NoError(t, err)
	assert.NotEmpty(t, seen.CorrelationID, "a call made inside musterd gets a correlation ID")
	assert.Empty(t, seen.View)
	ctx := WithCaller(t.Context(), Caller{View: "direct", Session: "s-1", CorrelationID: "c-1"})
	_, err = r.CallTool(ctx, "core_who", nil, nil)
	require.NoError(t, err)
	assert.Equal(t, Caller{View: "direct", Session: "s-1", CorrelationID: "c-1"}, Caller{View: seen.View, Session: seen.Session, CorrelationID: seen.CorrelationID})
}

type callerSource struct{ seen *Caller }

func (c *callerSource) Tools() []*mcp.Tool { return []*mcp.Tool{{Name: "core_who"}} }

func (c *callerSource) CallTool(ctx context.Context, _ string, _ map[string]any, _ func(*mcp.ProgressNotificationParams)) (*mcp.CallToolResult, error) {
	*c.seen, _ = CallerOf(ctx)
	return nil, nil
}

// A source's change reaches the OnChange watchers as a server's does, from
// the router's goroutine.
func TestASourcesChangeReachesTheWatchers(t *testing.T) {
	r := newBareRouter(t, nil, &fixedSource{})
	told := make(chan struct{}, 4)
	cancel := r.OnChange(func() { told <- struct{}{} })
	defer cancel()
	r.SourceChanged()
	select {
	case <-told:
	case <-time.After(10 * time.Second):
		t.Fatal("the watcher was not told of the source's change")
	}
}

// countingSource counts how often its offer is read.
type countingSource struct {
	fixedSource
	reads int
}

func (c *countingSource) Tools() []*mcp.Tool { c.reads++; return c.fixedSource.Tools() }

// A call of a name nothing offers looks at each source's offer once and
// computes no exposed set: unknown names cost no sort of every tool.
func TestACallOfAnUnknownNameComputesNoExposedSet(t *testing.T) {
	wf := &countingSource{fixedSource: fixedSource{tools: []*mcp.Tool{{Name: "workflow_a"}}}}
	r := newBareRouter(t, nil, wf)
	r.Tools()
	set := r.exposed.Load()
	before := wf.reads
	_, err := r.CallTool(t.Context(), "x_nope", nil, nil)
	require.ErrorIs(t, err, ErrUnknownTool)
	assert.Same(t, set, r.exposed.Load())
	assert.Equal(t, 1, wf.reads-before, "the source's offer read once")
}

// observedServers is a supervisor whose servers the test says.
type observedServers struct {
	noServers
	obs map[events.Key]supervisor.Observed
}

func (o observedServers) Get(k events.Key) (supervisor.Observed, bool) {
	obs, ok := o.obs[k]
	return obs, ok
}

// Server answers a running server as it offers itself, and names why
// another cannot be viewed: not declared, or not running and in which
// state.
func TestServerSaysHowAServerOffersItselfOrWhyItCannot(t *testing.T) {
	running := events.NewKey("MCPServer", "default", "git")
	failed := events.NewKey("MCPServer", "default", "broken")
	init := &mcp.InitializeResult{ServerInfo: &mcp.Implementation{Name: "git-server"}}
	tools := []*mcp.Tool{{Name: "log"}}
	servers := observedServers{obs: map[events.Key]supervisor.Observed{
		running: {State: v1alpha1.MCPServerStateRunning, Init: init, ToolDefs: tools},
		failed:  {State: v1alpha1.MCPServerStateFailed, LastError: "exit status 3\n; stderr:\nboom"},
	}}
	r, err := New(Options{Catalogue: catalogue.New(catalogue.Options{}), Servers: servers, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Declared: func(k events.Key) bool { return k != events.NewKey("MCPServer", "default", "nobody") }})
	require.NoError(t, err)

	offer, err := r.Server(running)
	require.NoError(t, err)
	assert.Same(t, init, offer.Init)
	assert.Equal(t, tools, offer.Tools)

	_, err = r.Server(events.NewKey("MCPServer", "default", "nobody"))
	assert.ErrorIs(t, err, ErrServerNotDeclared)
	_, err = r.Server(failed)
	assert.EqualError(t, err, "mcp server MCPServer/default/broken is not running (state Failed): exit status 3")
	_, err = r.Server(events.NewKey("MCPServer", "default", "stopped"))
	assert.EqualError(t, err, "mcp server MCPServer/default/stopped is not running (state Stopped)")
}
