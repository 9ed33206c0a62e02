//lint:file-ignore SA1019 sampling and roots are deprecated in 2026-07-28 but still part of MCP

package supervisor_test

import (
	"context"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/musterd/musterd/internal/conformancetest"
	"github.com/musterd/musterd/pkg/apis/muster/v1alpha1"
	"github.com/musterd/musterd/pkg/peer"
	"github.com/musterd/musterd/pkg/supervisor"
)

// newerPeer is a client of the 2026-07-28 generation: its lane speaks
// that generation to a server that offers it.
type newerPeer struct{ *fakePeer }

func (newerPeer) ProtocolVersion() string { return "2026-07-28" }
func (p newerPeer) Session() peer.Peer    { return p }

// inputServer runs the go-sdk's conformance server over stdio as k, with
// client sessions as c, a spec.timeout of timeout seconds.
func inputServer(t *testing.T, h *harness, k string, c supervisor.ClientSessions, timeout int) {
	t.Helper()
	h.sup.SetClientSessions(key(k), c)
	obs := h.ensure(t, key(k), v1alpha1.MCPServerSpec{Type: v1alpha1.MCPServerTypeStdio, Command: conformancetest.BuildEverythingServer(t), Timeout: timeout})
	require.Equal(t, "2026-07-28", obs.ProtocolVersion(), "the shared session speaks the newest generation")
}

// A 2026-07-28 server's input requests on a lane of that generation are
// fulfilled by musterd from the lane's client (sampling, elicitation,
// roots, several in one round, several rounds), and the call completes
// with the answers in the server's result.
func TestInputRequestsOfAServerAreAskedOfTheLanesClient(t *testing.T) {
	t.Parallel()
	h := newHarness(t, supervisor.Options{})
	inputServer(t, h, "input", supervisor.ClientSessionsPerClient, 20)
	alice := newerPeer{newFakePeer("alice", everything)}
	ctx := peer.With(callCtx(t), alice)
	for tool, want := range map[string]string{
		"test_input_required_result_elicitation":     "Hello, alice!",
		"test_input_required_result_sampling":        "Sampling response: from alice",
		"test_input_required_result_list_roots":      "Client exposed 1 root(s): file:///alice",
		"test_input_required_result_multiple_inputs": "from alice alice — 1 root(s) visible",
		"test_input_required_result_multi_round":     "Multi-round complete: alice likes unknown",
	} {
		got, err := callText(t, h.sup, ctx, "input", tool, nil)
		require.NoError(t, err, tool)
		assert.Equal(t, want, got, tool)
	}
	alice.mu.Lock()
	assert.ElementsMatch(t, []string{"elicitation", "sampling", "roots", "elicitation", "sampling", "roots", "elicitation", "elicitation"}, alice.asked)
	alice.mu.Unlock()
}

// What the client did not offer is refused by musterd, saying so; on the
// shared session every input request is, saying why. Neither waits.
func TestInputRequestsAreRefusedWhereNobodyCanAnswer(t *testing.T) {
	t.Parallel()
	h := newHarness(t, supervisor.Options{})
	inputServer(t, h, "lanes", supervisor.ClientSessionsPerClient, 20)
	inputServer(t, h, "shared", supervisor.ClientSessionsShared, 20)

	bob := newerPeer{newFakePeer("bob", &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{}})}
	_, err := callText(t, h.sup, peer.With(callCtx(t), bob), "lanes", "test_input_required_result_sampling", nil)
	require.Error(t, err)
	assert.Contains(t, err.Error(), `input request "capital_question" of the server's result: musterd: sampling/createMessage refused: the client (MCP session bob) offered no sampling capability`)

	for _, ctx := range []context.Context{callCtx(t), peer.With(callCtx(t), newerPeer{newFakePeer("carol", everything)})} {
		_, err = callText(t, h.sup, ctx, "shared", "test_input_required_result_elicitation", nil)
		require.Error(t, err)
		assert.Contains(t, err.Error(), `input request "user_name" of the server's result: musterd: elicitation/create refused: it came on the session to MCP server`)
		assert.Contains(t, err.Error(), "shared by all of musterd's clients")
	}
	bob.mu.Lock()
	assert.Empty(t, bob.asked, "nobody was asked")
	bob.mu.Unlock()
}

// A client that never answers does not hold the call for good: the
// server's spec.timeout ends it (the server itself keeps nothing in
// between: a 2026-07-28 server's call is over once it returned its input
// requests), and the client's question is cancelled. A client that goes
// away ends it at once.
func TestAnInputRequestNobodyAnswersEndsWithTheCallsTimeout(t *testing.T) {
	t.Parallel()
	h := newHarness(t, supervisor.Options{})
	inputServer(t, h, "slow", supervisor.ClientSessionsPerClient, 2)
	dave := newerPeer{newFakePeer("dave", everything)}
	dave.hold = make(chan struct{}) // never answers
	start := time.Now()
	_, err := callText(t, h.sup, peer.With(callCtx(t), dave), "slow", "test_input_required_result_elicitation", nil)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "no answer within 2s (spec.timeout)")
	assert.Less(t, time.Since(start), 10*time.Second)

	erin := newerPeer{newFakePeer("erin", everything)}
	erin.hold = make(chan struct{})
	go func() {
		<-erin.held
		close(erin.done) // its session ends with the question pending
	}()
	_, err = callText(t, h.sup, peer.With(callCtx(t), erin), "slow", "test_input_required_result_elicitation", nil)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "the client's session ended before it answered")
}
