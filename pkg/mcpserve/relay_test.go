package mcpserve

import (
	"context"
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/musterd/musterd/pkg/events"
	"github.com/musterd/musterd/pkg/peer"
	"github.com/musterd/musterd/pkg/router"
)

// askingBackend's server needs its client's input for every prompt and
// resource, as one of 2026-07-28 does: to a relaying call it answers with
// an input request and a state of its own first, and with its result once
// the answer and the state come back; what it got says whether the call
// was relayed, with which capabilities, answers and state.
type askingBackend struct{ *viewBackend }

func ask(ctx context.Context, what string) (requests mcp.InputRequestMap, state, got string) {
	if peer.Unrelayable(ctx) {
		return nil, "", what + ": not relayed, and takes no questions"
	}
	if !peer.Relays(ctx) {
		return nil, "", what + ": not relayed"
	}
	r, ok := peer.RoundFrom(ctx)
	if !ok {
		return mcp.InputRequestMap{"who": &mcp.ElicitParams{Mode: "form", Message: "Who is asking?"}}, "state of " + what, ""
	}
	name := "?"
	if e, ok := r.Responses["who"].(*mcp.ElicitResult); ok {
		name = fmt.Sprint(e.Content["name"])
	}
	caps := peer.RelayedCapabilities(ctx)
	return nil, "", fmt.Sprintf("%s for %s, with %q back, elicitation offered: %t", what, name, r.State, caps != nil && caps.Elicitation != nil)
}

func (askingBackend) ReadResource(ctx context.Context, uri string) (*mcp.ReadResourceResult, error) {
	requests, state, got := ask(ctx, uri)
	if requests != nil {
		return &mcp.ReadResourceResult{InputRequests: requests, RequestState: state}, nil
	}
	return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: uri, Text: got}}}, nil
}

func (b askingBackend) ReadServerResource(ctx context.Context, _ events.Key, uri string) (*mcp.ReadResourceResult, error) {
	return b.ReadResource(ctx, uri)
}

func (askingBackend) GetPrompt(ctx context.Context, name string, _ map[string]string) (*mcp.GetPromptResult, error) {
	requests, state, got := ask(ctx, name)
	if requests != nil {
		return &mcp.GetPromptResult{InputRequests: requests, RequestState: state}, nil
	}
	return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: got}}}}, nil
}

func (b askingBackend) GetServerPrompt(ctx context.Context, _ events.Key, name string, args map[string]string) (*mcp.GetPromptResult, error) {
	return b.GetPrompt(ctx, name, args)
}

// askingSetup serves the views of askingBackend, with one resource and one
// prompt, on /mcp, /mcp/direct and /mcp/servers/git alike.
func askingSetup(t *testing.T) string {
	t.Helper()
	key := events.NewKey("MCPServer", "default", "git")
	b := askingBackend{&viewBackend{fakeBackend: &fakeBackend{call: func(ctx context.Context, name string, _ map[string]any, _ func(*mcp.ProgressNotificationParams)) (*mcp.CallToolResult, error) {
		requests, state, got := ask(ctx, name)
		if requests != nil {
			return &mcp.CallToolResult{InputRequests: requests, RequestState: state}, nil
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: got}}}, nil
	}}}}
	b.setTools(echoTool("x_git_ask"))
	resource, prompt := &mcp.Resource{URI: "file:///notes.md", Name: "notes"}, &mcp.Prompt{Name: "greet"}
	b.resources, b.prompts = []*mcp.Resource{resource}, []*mcp.Prompt{prompt}
	init := initResult("git-server", "")
	init.Capabilities.Resources, init.Capabilities.Prompts = &mcp.ResourceCapabilities{}, &mcp.PromptCapabilities{}
	b.set(router.ServerOffer{Key: key, Init: init, Resources: []*mcp.Resource{resource}, Prompts: []*mcp.Prompt{prompt}}, nil)
	srv, err := New(Options{Backend: b, Logger: quiet()})
	require.NoError(t, err)
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(ts.Close)
	return ts.URL
}

// A prompt's and a resource's input-required result reach a client of
// 2026-07-28 on every view, its state sealed for that prompt or resource
// on that view, and its retry brings the answers and the server's own
// state back to the server; a state issued for one does not open for
// another, nor on another view, nor twice.
func TestAPromptsAndAResourcesInputRequestsAreRelayedToANewerClient(t *testing.T) {
	url := askingSetup(t)
	connect := func(path string) *mcp.ClientSession {
		t.Helper()
		c := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "0"}, &mcp.ClientOptions{
			MultiRoundTrip: &mcp.MultiRoundTripOptions{Disabled: true}, // the test answers by hand
			ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
				return nil, fmt.Errorf("not asked so")
			},
		})
		cs, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: url + path}, nil)
		require.NoError(t, err)
		t.Cleanup(func() { _ = cs.Close() })
		require.Equal(t, newestProtocol, cs.InitializeResult().ProtocolVersion)
		return cs
	}
	answers := mcp.InputResponseMap{"who": &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "Ada"}}}
	refused := func(what string, err error) {
		t.Helper()
		var rpcErr *jsonrpc.Error
		require.ErrorAs(t, err, &rpcErr, what)
		assert.Equal(t, int64(jsonrpc.CodeInvalidParams), rpcErr.Code, what)
		assert.Contains(t, rpcErr.Message, "requestState is not one musterd issued", what)
	}
	ctx := context.Background()
	states := map[string]string{} // the sealed states of each view's prompt
	for _, path := range []string{PathMCP, PathDirect, PathServers + "git"} {
		cs := connect(path)

		p, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "greet"})
		require.NoError(t, err, path)
		require.True(t, p.NeedsInput(), "%s: the prompt's input-required result reaches the client", path)
		require.Contains(t, p.InputRequests, "who", path)
		require.True(t, strings.HasPrefix(p.RequestState, requestStatePrefix), "%s: sealed: %q", path, p.RequestState)
		assert.NotContains(t, p.RequestState, "state of", path)
		states[path] = p.RequestState

		r, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "file:///notes.md"})
		require.NoError(t, err, path)
		require.True(t, r.NeedsInput(), "%s: the resource's input-required result reaches the client", path)
		require.True(t, strings.HasPrefix(r.RequestState, requestStatePrefix), "%s: sealed: %q", path, r.RequestState)

		_, err = cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "greet", InputResponses: answers, RequestState: r.RequestState})
		refused(path+": a resource's state for a prompt", err)

		done, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "file:///notes.md", InputResponses: answers, RequestState: r.RequestState})
		require.NoError(t, err, path)
		require.False(t, done.NeedsInput(), path)
		require.Len(t, done.Contents, 1, path)
		assert.Equal(t, `file:///notes.md for Ada, with "state of file:///notes.md" back, elicitation offered: true`, done.Contents[0].Text, path)
		_, err = cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "file:///notes.md", InputResponses: answers, RequestState: r.RequestState})
		refused(path+": replayed", err)
	}
	// Each view's prompt state opens on its own view only.
	direct := connect(PathDirect)
	_, err := direct.GetPrompt(ctx, &mcp.GetPromptParams{Name: "greet", InputResponses: answers, RequestState: states[PathServers+"git"]})
	refused("a server view's state on /mcp/direct", err)
	done, err := direct.GetPrompt(ctx, &mcp.GetPromptParams{Name: "greet", InputResponses: answers, RequestState: states[PathDirect]})
	require.NoError(t, err)
	require.Len(t, done.Messages, 1)
	assert.Equal(t, `greet for Ada, with "state of greet" back, elicitation offered: true`, done.Messages[0].Content.(*mcp.TextContent).Text)
}

// A client of 2025-11-25 is not relayed to: its prompts/get and
// resources/read reach the Backend as before, whatever a server asks then
// being asked of the client on its session.
func TestAnOlderClientsPromptsAndResourcesAreNotRelayed(t *testing.T) {
	url := askingSetup(t)
	for _, path := range []string{PathMCP, PathDirect, PathServers + "git"} {
		c := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "0"}, nil)
		cs, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: url + path},
			&mcp.ClientSessionOptions{ProtocolVersion: latestLegacy})
		require.NoError(t, err)
		p, err := cs.GetPrompt(context.Background(), &mcp.GetPromptParams{Name: "greet"})
		require.NoError(t, err, path)
		require.Len(t, p.Messages, 1, path)
		assert.Equal(t, "greet: not relayed", p.Messages[0].Content.(*mcp.TextContent).Text, path)
		r, err := cs.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: "file:///notes.md"})
		require.NoError(t, err, path)
		require.Len(t, r.Contents, 1, path)
		assert.Equal(t, "file:///notes.md: not relayed", r.Contents[0].Text, path)
		require.NoError(t, cs.Close())
	}
}

// muster's call_tool, get_prompt and get_resource cannot carry input
// requests nor answers: a newer client's call through them is not relayed,
// and takes no questions (the supervisor refuses the server's, saying so).
func TestTheMetaToolsDoNotRelay(t *testing.T) {
	url := askingSetup(t)
	c := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "0"}, nil)
	cs, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: url + PathMCP}, nil)
	require.NoError(t, err)
	defer cs.Close()
	require.Equal(t, newestProtocol, cs.InitializeResult().ProtocolVersion)
	res := call(t, cs, "call_tool", map[string]any{"name": "x_git_ask"})
	assert.False(t, res.IsError)
	assert.Contains(t, text(t, res), "x_git_ask: not relayed, and takes no questions")
	res = call(t, cs, "get_prompt", map[string]any{"name": "greet"})
	assert.False(t, res.IsError)
	assert.Contains(t, text(t, res), "greet: not relayed, and takes no questions")
	res = call(t, cs, "get_resource", map[string]any{"uri": "file:///notes.md"})
	assert.False(t, res.IsError)
	assert.Contains(t, text(t, res), "file:///notes.md: not relayed, and takes no questions")
}
