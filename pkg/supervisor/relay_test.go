//lint:file-ignore SA1019 roots are deprecated in 2026-07-28 but still part of MCP, and a client's roots capability is relayed with the others

package supervisor_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/musterd/musterd/pkg/apis/muster/v1alpha1"
	"github.com/musterd/musterd/pkg/peer"
	"github.com/musterd/musterd/pkg/supervisor"
)

// elicitOnly is what a client of 2026-07-28 declares in its request that
// can be asked for elicitation, and nothing else.
var elicitOnly = &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{}}

// A relaying call's prompts/get (a client of 2026-07-28, on the shared
// session) returns the server's input-required result as it is, and its
// retry brings the client's answers to the server; a call that does not
// relay is fulfilled on its session as before, which the shared session
// refuses.
func TestARelayingCallsPromptNeedsInputAndItsRetryCompletesIt(t *testing.T) {
	t.Parallel()
	h := newHarness(t, supervisor.Options{})
	inputServer(t, h, "prompts", supervisor.ClientSessionsShared, 20)
	const prompt = "test_input_required_result_prompt"

	relaying := peer.WithRelay(callCtx(t), elicitOnly)
	first, err := h.sup.GetPrompt(relaying, key("prompts"), &mcp.GetPromptParams{Name: prompt})
	require.NoError(t, err)
	require.True(t, first.NeedsInput(), "the server's input-required result is the call's")
	require.Contains(t, first.InputRequests, "user_context")
	assert.Empty(t, first.Messages)

	answers := mcp.InputResponseMap{"user_context": &mcp.ElicitResult{Action: "accept", Content: map[string]any{"context": "from the client"}}}
	retry := peer.WithRound(relaying, peer.Round{Responses: answers, State: first.RequestState})
	done, err := h.sup.GetPrompt(retry, key("prompts"), &mcp.GetPromptParams{Name: prompt})
	require.NoError(t, err)
	assert.False(t, done.NeedsInput())
	require.Len(t, done.Messages, 1)
	assert.Equal(t, "Context: from the client", done.Messages[0].Content.(*mcp.TextContent).Text)

	_, err = h.sup.GetPrompt(callCtx(t), key("prompts"), &mcp.GetPromptParams{Name: prompt})
	require.Error(t, err, "not relayed: fulfilled on the shared session, which refuses")
	assert.Contains(t, err.Error(), `input request "user_context" of the server's result: musterd: elicitation/create refused`)
}

// A relaying call carries its client's own capabilities of the request to
// the server, in its _meta as a client of 2026-07-28 sends them: the
// server asks for what that client can give (the conformance server's
// test_input_required_result_capabilities asks for exactly what is
// declared), not for what musterd's shared session offers (nothing).
func TestARelayingCallCarriesItsClientsCapabilitiesToTheServer(t *testing.T) {
	t.Parallel()
	h := newHarness(t, supervisor.Options{})
	inputServer(t, h, "caps", supervisor.ClientSessionsShared, 20)
	const tool = "test_input_required_result_capabilities"
	asked := func(ctx context.Context) []string {
		t.Helper()
		res, err := h.sup.CallTool(ctx, key("caps"), &mcp.CallToolParams{Name: tool}, nil)
		require.NoError(t, err)
		if !res.NeedsInput() {
			require.NotEmpty(t, res.Content)
			return []string{res.Content[0].(*mcp.TextContent).Text}
		}
		return slices.Sorted(func(yield func(string) bool) {
			for id := range res.InputRequests {
				if !yield(id) {
					return
				}
			}
		})
	}
	for name, c := range map[string]struct {
		caps *mcp.ClientCapabilities
		want []string
	}{
		"sampling":    {&mcp.ClientCapabilities{Sampling: &mcp.SamplingCapabilities{}}, []string{"greeting"}},
		"elicitation": {elicitOnly, []string{"user_name"}},
		"roots":       {&mcp.ClientCapabilities{RootsV2: &mcp.RootCapabilities{}}, []string{"client_roots"}},
		"everything":  {everything, []string{"client_roots", "greeting", "user_name"}},
		"nothing":     {nil, []string{"No declared client capability supports an in-band input request"}},
	} {
		assert.Equal(t, c.want, asked(peer.WithRelay(callCtx(t), c.caps)), name)
	}
	assert.Equal(t, []string{"No declared client capability supports an in-band input request"}, asked(callCtx(t)),
		"not relayed: the shared session's own capabilities, which offer nothing")
}

// askingResourceServer serves over streamable HTTP one resource that needs
// its client's input when the client declared elicitation, and says what
// it got back; statelessly, so in 2026-07-28.
func askingResourceServer(t *testing.T) string {
	t.Helper()
	srv := mcp.NewServer(&mcp.Implementation{Name: "asking", Version: "1"}, nil)
	srv.AddResource(&mcp.Resource{URI: "file:///notes.md", Name: "notes"}, func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		text := "nobody to ask"
		if e, ok := req.Params.InputResponses["who"].(*mcp.ElicitResult); ok {
			text = fmt.Sprintf("notes for %v, state %q", e.Content["name"], req.Params.RequestState)
		} else if caps := req.ClientCapabilities(); caps != nil && caps.Elicitation != nil {
			return &mcp.ReadResourceResult{RequestState: "server-state", InputRequests: mcp.InputRequestMap{"who": &mcp.ElicitParams{
				Mode: "form", Message: "Who reads?",
				RequestedSchema: map[string]any{"type": "object", "properties": map[string]any{"name": map[string]any{"type": "string"}}},
			}}}, nil
		}
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, Text: text}}}, nil
	})
	ts := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, &mcp.StreamableHTTPOptions{Stateless: true}))
	t.Cleanup(ts.Close)
	return ts.URL
}

// A relaying call's resources/read is relayed as its prompts/get: the
// server sees its client's capabilities, its input-required result is the
// call's, and the retry brings the answers and the server's own state.
func TestARelayingCallsResourceNeedsInputAndItsRetryCompletesIt(t *testing.T) {
	t.Parallel()
	url := askingResourceServer(t) // before the harness: its cleanup, ending the session to it, runs first
	h := newHarness(t, supervisor.Options{})
	obs := h.ensure(t, key("resources"), remote(v1alpha1.MCPServerTypeStreamableHTTP, url))
	require.Equal(t, "2026-07-28", obs.ProtocolVersion())
	read := func(ctx context.Context) *mcp.ReadResourceResult {
		t.Helper()
		res, err := h.sup.ReadResource(ctx, key("resources"), &mcp.ReadResourceParams{URI: "file:///notes.md"})
		require.NoError(t, err)
		return res
	}
	relaying := peer.WithRelay(callCtx(t), elicitOnly)
	first := read(relaying)
	require.True(t, first.NeedsInput(), "the server's input-required result is the call's")
	assert.Equal(t, "server-state", first.RequestState)
	require.Contains(t, first.InputRequests, "who")

	answers := mcp.InputResponseMap{"who": &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "Ada"}}}
	done := read(peer.WithRound(relaying, peer.Round{Responses: answers, State: first.RequestState}))
	require.False(t, done.NeedsInput())
	require.Len(t, done.Contents, 1)
	assert.Equal(t, `notes for Ada, state "server-state"`, done.Contents[0].Text)

	assert.Equal(t, "nobody to ask", read(callCtx(t)).Contents[0].Text, "not relayed: the shared session offers no elicitation")
}

// olderAskingResourceServer serves a resource whose read asks the client
// for a name, classically (elicitation/create during the read), when the
// client offered elicitation; with sessions, so in 2025-11-25.
func olderAskingResourceServer(t *testing.T) string {
	t.Helper()
	srv := mcp.NewServer(&mcp.Implementation{Name: "older-asking", Version: "1"}, nil)
	srv.AddResource(&mcp.Resource{URI: "file:///notes.md", Name: "notes"}, func(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		text := "nobody to ask"
		if caps := req.ClientCapabilities(); caps != nil && caps.Elicitation != nil {
			res, err := req.Session.Elicit(ctx, &mcp.ElicitParams{Message: "Who reads?",
				RequestedSchema: map[string]any{"type": "object", "properties": map[string]any{"name": map[string]any{"type": "string"}}}})
			if err != nil {
				return nil, err
			}
			text = fmt.Sprintf("notes for %v", res.Content["name"])
		}
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, Text: text}}}, nil
	})
	ts := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	t.Cleanup(ts.Close)
	return ts.URL
}

// A session of 2025-11-25 has its client's capabilities from initialize:
// a relaying call on musterd's shared session to such a server carries no
// others in its _meta, so the server asks nothing of that session, which
// offers nothing, whatever the relaying client declared. Where the call
// gets a session of its own (a remote server's, by default), the server's
// classic question is bridged (bridge.go): the read ends with an
// input-required result naming the parked call, and the retry's answer
// reaches the waiting server.
func TestARelayingCallOnAnOlderSessionCarriesNoCapabilitiesOfItsClient(t *testing.T) {
	t.Parallel()
	url := olderAskingResourceServer(t) // before the harness: its cleanup, ending the session to it, runs first
	h := newHarness(t, supervisor.Options{})
	h.sup.SetClientSessions(key("older-shared"), supervisor.ClientSessionsShared)
	for _, k := range []string{"older-shared", "older"} {
		obs := h.ensure(t, key(k), remote(v1alpha1.MCPServerTypeStreamableHTTP, url))
		require.Equal(t, "2025-11-25", obs.ProtocolVersion())
	}
	read := func(ctx context.Context, k string) *mcp.ReadResourceResult {
		t.Helper()
		res, err := h.sup.ReadResource(ctx, key(k), &mcp.ReadResourceParams{URI: "file:///notes.md"})
		require.NoError(t, err)
		return res
	}
	relaying := peer.WithRelay(callCtx(t), elicitOnly)
	res := read(relaying, "older-shared")
	require.Len(t, res.Contents, 1)
	assert.Equal(t, "nobody to ask", res.Contents[0].Text)

	first := read(relaying, "older")
	require.Len(t, first.InputRequests, 1, "bridged: the server's classic question is the read's input-required result")
	var id string
	for k, r := range first.InputRequests {
		id = k
		assert.Equal(t, "Who reads?", r.(*mcp.ElicitParams).Message)
	}
	answers := mcp.InputResponseMap{id: &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "Ada"}}}
	done := read(peer.WithRound(relaying, peer.Round{Responses: answers, State: first.RequestState}), "older")
	require.Len(t, done.Contents, 1)
	assert.Equal(t, "notes for Ada", done.Contents[0].Text, "the answer reached the waiting server")
}
