//lint:file-ignore SA1019 sampling and roots are deprecated in 2026-07-28 but still part of MCP

package supervisor_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/musterd/musterd/pkg/apis/muster/v1alpha1"
	"github.com/musterd/musterd/pkg/peer"
	"github.com/musterd/musterd/pkg/supervisor"
)

// relaying is the context of a call of a 2026-07-28 client that declared
// caps, retrying with round if it is set.
func relaying(t *testing.T, caps *mcp.ClientCapabilities, round *peer.Round) context.Context {
	ctx := peer.WithRelay(callCtx(t), caps)
	if round != nil {
		ctx = peer.WithRound(ctx, *round)
	}
	return ctx
}

// onlyRequest is the one input request of an input-required result, and
// its ID.
func onlyRequest(t *testing.T, res *mcp.CallToolResult) (string, mcp.InputRequest) {
	t.Helper()
	require.Len(t, res.InputRequests, 1, "an input-required result with one question: %+v", res)
	require.Empty(t, res.Content)
	require.NotEmpty(t, res.RequestState)
	for id, r := range res.InputRequests {
		return id, r
	}
	return "", nil
}

// A server of 2025-11-25 that asks its client mid-call, called by a client
// of 2026-07-28: the call ends with an input-required result asking the
// same, and the retry's answer reaches the waiting server, whose result
// carries it. Each question of the three kinds; every call on a lane of
// its own.
func TestAnOlderServersRequestsAreBridgedToANewerClientsRounds(t *testing.T) {
	t.Parallel()
	h := newHarness(t, supervisor.Options{})
	h.sup.SetClientSessions(key("older"), supervisor.ClientSessionsPerClient)
	h.ensure(t, key("older"), fake("-tools", askingTools, "-protocols", olderGeneration))

	for _, c := range []struct {
		tool   string
		args   map[string]any
		check  func(mcp.InputRequest)
		answer mcp.InputResponse
		want   string
	}{
		{"elicit", map[string]any{"message": "who are you?"},
			func(r mcp.InputRequest) { assert.Equal(t, "who are you?", r.(*mcp.ElicitParams).Message) },
			&mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "ada"}}, `elicited: accept {"name":"ada"}`},
		{"sample", map[string]any{"prompt": "a haiku"},
			func(r mcp.InputRequest) {
				p := r.(*mcp.CreateMessageWithToolsParams)
				assert.Equal(t, "a haiku", p.Messages[0].Content[0].(*mcp.TextContent).Text)
			},
			&mcp.CreateMessageWithToolsResult{Model: "m", Role: "assistant", Content: []mcp.Content{&mcp.TextContent{Text: "old pond"}}}, "sampled: old pond"},
		{"roots", nil,
			func(r mcp.InputRequest) { assert.IsType(t, &mcp.ListRootsParams{}, r) },
			&mcp.ListRootsResult{Roots: []*mcp.Root{{URI: "file:///ada"}}}, "roots: file:///ada"},
	} {
		t.Run(c.tool, func(t *testing.T) {
			res, err := h.sup.CallTool(relaying(t, everything, nil), key("older"), &mcp.CallToolParams{Name: c.tool, Arguments: c.args}, nil)
			require.NoError(t, err)
			id, req := onlyRequest(t, res)
			c.check(req)

			round := peer.Round{Responses: mcp.InputResponseMap{id: c.answer}, State: res.RequestState}
			res, err = h.sup.CallTool(relaying(t, everything, &round), key("older"), &mcp.CallToolParams{Name: c.tool, Arguments: c.args}, nil)
			require.NoError(t, err)
			require.Empty(t, res.InputRequests)
			assert.Equal(t, c.want, res.Content[0].(*mcp.TextContent).Text)

			_, err = h.sup.CallTool(relaying(t, everything, &round), key("older"), &mcp.CallToolParams{Name: c.tool, Arguments: c.args}, nil)
			var rpcErr *jsonrpc.Error
			require.ErrorAs(t, err, &rpcErr, "a round answered once is answered")
			assert.Equal(t, int64(jsonrpc.CodeInvalidParams), rpcErr.Code)
			assert.Contains(t, rpcErr.Message, "call the tool again")
		})
	}
	require.Eventually(t, func() bool { return h.sup.Lanes(key("older")) == 0 }, deadline, 10*time.Millisecond,
		"each call's lane ends with the call")
}

// A retry answers only the call it was issued for: another tool's, or
// another server's, is told the call ended; an unanswered question is
// asked again.
func TestABridgedRetryAnswersOnlyItsOwnCall(t *testing.T) {
	t.Parallel()
	h := newHarness(t, supervisor.Options{})
	h.sup.SetClientSessions(key("older"), supervisor.ClientSessionsPerClient)
	h.ensure(t, key("older"), fake("-tools", askingTools, "-protocols", olderGeneration))
	elicit := &mcp.CallToolParams{Name: "elicit", Arguments: map[string]any{"message": "who?"}}

	res, err := h.sup.CallTool(relaying(t, everything, nil), key("older"), elicit, nil)
	require.NoError(t, err)
	id, _ := onlyRequest(t, res)
	answer := mcp.InputResponseMap{id: &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "ada"}}}

	_, err = h.sup.CallTool(relaying(t, everything, &peer.Round{Responses: answer, State: res.RequestState}), key("older"),
		&mcp.CallToolParams{Name: "sample", Arguments: map[string]any{"prompt": "x"}}, nil)
	require.Error(t, err, "another tool's retry")
	assert.Contains(t, err.Error(), "call the tool again")

	again, err := h.sup.CallTool(relaying(t, everything, &peer.Round{State: res.RequestState}), key("older"), elicit, nil)
	require.NoError(t, err)
	againID, req := onlyRequest(t, again)
	assert.Equal(t, id, againID, "an unanswered question is asked again")
	assert.Equal(t, "who?", req.(*mcp.ElicitParams).Message)

	done, err := h.sup.CallTool(relaying(t, everything, &peer.Round{Responses: answer, State: again.RequestState}), key("older"), elicit, nil)
	require.NoError(t, err)
	assert.Equal(t, `elicited: accept {"name":"ada"}`, done.Content[0].(*mcp.TextContent).Text)
}

// A client that never comes back leaves the server waiting no longer than
// its spec.timeout: then the server's question is answered with an error,
// the call's lane closes, and a late retry is told the call ended.
func TestABridgedCallWhoseClientNeverRetriesEndsAtTheTimeout(t *testing.T) {
	t.Parallel()
	url, _ := startHTTPFake(t, "-tools", askingTools, "-protocols", olderGeneration)
	h := newHarness(t, supervisor.Options{})
	spec := remote(v1alpha1.MCPServerTypeStreamableHTTP, url)
	spec.Timeout = 1
	h.ensure(t, key("remote"), spec)

	start := time.Now()
	res, err := h.sup.CallTool(relaying(t, everything, nil), key("remote"), &mcp.CallToolParams{Name: "elicit", Arguments: map[string]any{"message": "who?"}}, nil)
	require.NoError(t, err)
	id, _ := onlyRequest(t, res)
	assert.Equal(t, 1, h.sup.Lanes(key("remote")), "the call's session of its own, by default for a remote server")

	require.Eventually(t, func() bool { return h.sup.Lanes(key("remote")) == 0 }, deadline, 10*time.Millisecond,
		"the lane closes once the timeout ends the call")
	assert.GreaterOrEqual(t, time.Since(start), time.Second, "not before the timeout")
	var outcome string
	require.Eventually(t, func() bool {
		outcome, err = callText(t, h.sup, callCtx(t), "remote", "asked", nil)
		return err == nil && outcome != ""
	}, deadline, 10*time.Millisecond)
	assert.True(t, strings.HasPrefix(outcome, "error: "), "the server's question was answered with an error: %q", outcome)

	answer := mcp.InputResponseMap{id: &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "late"}}}
	_, err = h.sup.CallTool(relaying(t, everything, &peer.Round{Responses: answer, State: res.RequestState}), key("remote"),
		&mcp.CallToolParams{Name: "elicit", Arguments: map[string]any{"message": "who?"}}, nil)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "has ended")
}

// Where no bridge is built, the older server's request fails as on any
// shared session, at once: for a client that declared nothing it could be
// asked, and on a server shared by policy.
func TestNoBridgeWhereTheClientOffersNothingOrTheServerIsShared(t *testing.T) {
	t.Parallel()
	h := newHarness(t, supervisor.Options{})
	h.sup.SetClientSessions(key("older"), supervisor.ClientSessionsPerClient)
	h.ensure(t, key("older"), fake("-tools", askingTools, "-protocols", olderGeneration))
	h.sup.SetClientSessions(key("shared"), supervisor.ClientSessionsShared)
	h.ensure(t, key("shared"), fake("-tools", askingTools, "-protocols", olderGeneration))

	for _, c := range []struct {
		server string
		caps   *mcp.ClientCapabilities
	}{{"older", &mcp.ClientCapabilities{}}, {"older", nil}, {"shared", everything}} {
		text, err := callText(t, h.sup, relaying(t, c.caps, nil), c.server, "elicit", map[string]any{"message": "who?"})
		require.NoError(t, err)
		// The shared session offers the server nothing: the go-sdk server
		// refuses its own request before sending it.
		assert.Equal(t, "error: client does not support elicitation", text, "%s, %v", c.server, c.caps)
		assert.Zero(t, h.sup.Lanes(key(c.server)))
	}
}

// A call made for a newer client by a way that cannot carry its questions
// (a meta-tool, a workflow's step) is neither relayed nor bridged: a newer
// server's input request is refused, saying why and what to call instead,
// and an older server's question fails at once, no call left waiting.
func TestACallThatCannotCarryQuestionsIsNeitherRelayedNorBridged(t *testing.T) {
	t.Parallel()
	h := newHarness(t, supervisor.Options{})
	inputServer(t, h, "newer", supervisor.ClientSessionsAuto, 20)
	h.sup.SetClientSessions(key("older"), supervisor.ClientSessionsPerClient)
	h.ensure(t, key("older"), fake("-tools", askingTools, "-protocols", olderGeneration))
	step := peer.WithoutRelay(relaying(t, everything, nil))

	_, err := callText(t, h.sup, step, "newer", "test_input_required_result_elicitation", nil)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "elicitation/create refused: the client speaks MCP 2026-07-28, and this call was made for it by a way that cannot carry")
	assert.Contains(t, err.Error(), "call it natively instead: tools/call, prompts/get or resources/read on musterd's direct view or the server's own")

	text, err := callText(t, h.sup, step, "older", "elicit", map[string]any{"message": "who?"})
	require.NoError(t, err)
	assert.Equal(t, "error: client does not support elicitation", text)
	assert.Zero(t, h.sup.Lanes(key("older")))
}
