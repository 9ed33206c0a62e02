//lint:file-ignore SA1019 roots, sampling and logging are deprecated as of MCP 2026-07-28 (SEP-2577), and passed through for the clients and servers of 2025-11-25 that use them.

package supervisor_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/musterd/musterd/pkg/apis/muster/v1alpha1"
	"github.com/musterd/musterd/pkg/identity"
	"github.com/musterd/musterd/pkg/peer"
	"github.com/musterd/musterd/pkg/supervisor"
)

// fakePeer is a client for the lane tests: it answers each question in its
// own name, or holds it until hold is closed, its session ends or the
// question is cancelled.
type fakePeer struct {
	id   string
	caps *mcp.ClientCapabilities
	done chan struct{}
	hold chan struct{} // nil: answer at once

	mu       sync.Mutex
	asked    []string
	logs     []string
	changed  chan struct{}
	level    mcp.LoggingLevel
	roots    uint64
	held     chan struct{} // closed at the first question held
	heldOnce sync.Once
}

func newFakePeer(id string, caps *mcp.ClientCapabilities) *fakePeer {
	return &fakePeer{id: id, caps: caps, done: make(chan struct{}), changed: make(chan struct{}), held: make(chan struct{})}
}

var _ peer.Peer = (*fakePeer)(nil)

func (p *fakePeer) ID() string                            { return p.id }
func (p *fakePeer) Capabilities() *mcp.ClientCapabilities { return p.caps }
func (p *fakePeer) Done() <-chan struct{}                 { return p.done }
func (p *fakePeer) Session() peer.Peer                    { return p }

func (p *fakePeer) answer(ctx context.Context, what string) error {
	p.mu.Lock()
	p.asked = append(p.asked, what)
	p.mu.Unlock()
	if p.hold == nil {
		return nil
	}
	p.heldOnce.Do(func() { close(p.held) })
	select {
	case <-p.hold:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (p *fakePeer) CreateMessage(ctx context.Context, _ *mcp.CreateMessageWithToolsParams) (*mcp.CreateMessageWithToolsResult, error) {
	if err := p.answer(ctx, "sampling"); err != nil {
		return nil, err
	}
	return &mcp.CreateMessageWithToolsResult{Model: "m", Role: "assistant", Content: []mcp.Content{&mcp.TextContent{Text: "from " + p.id}}}, nil
}

func (p *fakePeer) Elicit(ctx context.Context, _ *mcp.ElicitParams) (*mcp.ElicitResult, error) {
	if err := p.answer(ctx, "elicitation"); err != nil {
		return nil, err
	}
	return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": p.id}}, nil
}

func (p *fakePeer) ListRoots(ctx context.Context, _ *mcp.ListRootsParams) (*mcp.ListRootsResult, error) {
	if err := p.answer(ctx, "roots"); err != nil {
		return nil, err
	}
	return &mcp.ListRootsResult{Roots: []*mcp.Root{{URI: "file:///" + p.id}}}, nil
}

func (p *fakePeer) NotifyElicitationComplete(context.Context, *mcp.ElicitationCompleteParams) error {
	return nil
}

func (p *fakePeer) Log(_ context.Context, params *mcp.LoggingMessageParams) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.logs = append(p.logs, params.Data.(string))
	return nil
}

func (p *fakePeer) LogLevel() mcp.LoggingLevel {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.level
}

func (p *fakePeer) RootsChanges() uint64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.roots
}

func (p *fakePeer) Changed() <-chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.changed
}

func (p *fakePeer) setLevel(level mcp.LoggingLevel) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.level = level
	close(p.changed)
	p.changed = make(chan struct{})
}

func (p *fakePeer) questions() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.asked...)
}

var everything = &mcp.ClientCapabilities{
	Sampling:    &mcp.SamplingCapabilities{},
	Elicitation: &mcp.ElicitationCapabilities{Form: &mcp.FormElicitationCapabilities{}},
	RootsV2:     &mcp.RootCapabilities{ListChanged: true},
}

const askingTools = "sample,elicit,roots,log,json,asked"

// olderGeneration makes mcp-fake a server of 2025-11-25 only: its asking
// tools send classic requests, which a go-sdk server may not send on a
// 2026-07-28 session (there a server returns input requests instead:
// inputrequests_test.go).
const olderGeneration = "2025-11-25"

func callText(t *testing.T, sup *supervisor.Supervisor, ctx context.Context, k string, tool string, args map[string]any) (string, error) {
	t.Helper()
	res, err := sup.CallTool(ctx, key(k), &mcp.CallToolParams{Name: tool, Arguments: args}, nil)
	if err != nil {
		return "", err
	}
	return res.Content[0].(*mcp.TextContent).Text, nil
}

// Two clients calling a server run per client each get their own
// questions, from a process of their own; a lane ends with its client.
func TestLanesGiveEachClientItsOwnServer(t *testing.T) {
	h := newHarness(t, supervisor.Options{})
	h.sup.SetClientSessions(key("lanes"), supervisor.ClientSessionsPerClient)
	tools := askingTools + "," + marker(t) // its processes, not another test run's
	h.ensure(t, key("lanes"), fake("-tools", tools, "-protocols", olderGeneration))
	alice, bob := newFakePeer("alice", everything), newFakePeer("bob", everything)
	for _, p := range []*fakePeer{alice, bob} {
		ctx := peer.With(t.Context(), p)
		text, err := callText(t, h.sup, ctx, "lanes", "sample", map[string]any{"prompt": "who?"})
		require.NoError(t, err)
		assert.Equal(t, "sampled: from "+p.id, text)
		text, err = callText(t, h.sup, ctx, "lanes", "elicit", map[string]any{"message": "who?"})
		require.NoError(t, err)
		assert.Equal(t, `elicited: accept {"name":"`+p.id+`"}`, text)
		text, err = callText(t, h.sup, ctx, "lanes", "roots", nil)
		require.NoError(t, err)
		assert.Equal(t, "roots: file:///"+p.id, text)
		assert.Equal(t, []string{"sampling", "elicitation", "roots"}, p.questions())
	}
	assert.Equal(t, 2, h.sup.Lanes(key("lanes")))
	assert.Len(t, processesWith(t, tools), 3, "the shared server and one per client")

	close(alice.done)
	require.Eventually(t, func() bool { return h.sup.Lanes(key("lanes")) == 1 }, deadline, 10*time.Millisecond,
		"alice's lane ends with her session")
	require.Eventually(t, func() bool { return len(processesWith(t, tools)) == 2 }, deadline, 10*time.Millisecond,
		"and its process with it")
}

// A shared server's questions are refused, saying why; a call without a
// client (a workflow step) is served by the shared session.
func TestASharedServersQuestionsAreRefused(t *testing.T) {
	h := newHarness(t, supervisor.Options{})
	h.ensure(t, key("shared"), fake("-tools", askingTools, "-protocols", olderGeneration))
	alice := newFakePeer("alice", everything)
	text, err := callText(t, h.sup, peer.With(t.Context(), alice), "shared", "sample", map[string]any{"prompt": "who?"})
	require.NoError(t, err)
	assert.Contains(t, text, "refused")
	assert.Contains(t, text, "shared by all of musterd's clients")
	assert.Contains(t, text, supervisor.ClientSessionsAnnotation, "it says how to get a session of one's own")
	assert.Empty(t, alice.questions())
	assert.Zero(t, h.sup.Lanes(key("shared")))
}

// A lane offers only what its client offered: what it lacks is refused
// naming the client and the capability.
func TestALaneOffersOnlyWhatItsClientOffered(t *testing.T) {
	h := newHarness(t, supervisor.Options{})
	h.sup.SetClientSessions(key("lanes"), supervisor.ClientSessionsPerClient)
	h.ensure(t, key("lanes"), fake("-tools", askingTools, "-protocols", olderGeneration))
	bare := newFakePeer("bare", &mcp.ClientCapabilities{})
	ctx := peer.With(t.Context(), bare)
	text, err := callText(t, h.sup, ctx, "lanes", "sample", map[string]any{"prompt": "who?"})
	require.NoError(t, err)
	assert.Contains(t, text, "the client (MCP session bare) offered no sampling capability")
	text, err = callText(t, h.sup, ctx, "lanes", "roots", nil)
	require.NoError(t, err)
	assert.Contains(t, text, "offered no roots capability")
	text, err = callText(t, h.sup, ctx, "lanes", "elicit", map[string]any{"message": "who?"})
	require.NoError(t, err)
	assert.Contains(t, text, "error:", "the server's own answer to a client without elicitation")
	assert.Empty(t, bare.questions())
}

// A client that goes away while a server waits for its answer: the server
// gets an answer at once (an error), not a wait, on a remote server whose
// session outlives the lane's end as on a stdio one.
func TestAServerIsAnsweredWhenItsClientGoesAway(t *testing.T) {
	url, _ := startHTTPFake(t, "-tools", askingTools)
	h := newHarness(t, supervisor.Options{})
	h.ensure(t, key("remote"), remote(v1alpha1.MCPServerTypeStreamableHTTP, url))
	dora := newFakePeer("dora", everything)
	dora.hold = make(chan struct{})
	ctx, cancel := context.WithCancel(peer.With(t.Context(), dora))
	returned := make(chan error, 1)
	go func() {
		_, err := callText(t, h.sup, ctx, "remote", "elicit", map[string]any{"message": "wait"})
		returned <- err
	}()
	select {
	case <-dora.held:
	case <-time.After(deadline):
		t.Fatal("the question never reached the client")
	}
	// The client's session ends: its call is cancelled with it, as the
	// endpoint does.
	close(dora.done)
	cancel()
	require.Error(t, <-returned)
	other := newFakePeer("other", &mcp.ClientCapabilities{})
	require.Eventually(t, func() bool {
		text, err := callText(t, h.sup, peer.With(t.Context(), other), "remote", "asked", nil)
		return err == nil && text != ""
	}, deadline, 20*time.Millisecond, "the server was answered")
	text, _ := callText(t, h.sup, peer.With(t.Context(), other), "remote", "asked", nil)
	assert.True(t, strings.HasPrefix(text, "error:") || text == "cancelled", text)
}

// A lane's calls fail with ErrStopped when its server stops under them,
// and the server is asked nothing more.
func TestALanesCallsFailWhenItsServerStops(t *testing.T) {
	h := newHarness(t, supervisor.Options{})
	h.sup.SetClientSessions(key("lanes"), supervisor.ClientSessionsPerClient)
	tools := askingTools + "," + marker(t)
	h.ensure(t, key("lanes"), fake("-tools", tools, "-protocols", olderGeneration))
	fred := newFakePeer("fred", everything)
	fred.hold = make(chan struct{})
	defer close(fred.hold)
	returned := make(chan error, 1)
	go func() {
		_, err := callText(t, h.sup, peer.With(t.Context(), fred), "lanes", "elicit", map[string]any{"message": "wait"})
		returned <- err
	}()
	<-fred.held
	ctx, cancel := context.WithTimeout(t.Context(), deadline)
	defer cancel()
	require.NoError(t, h.sup.Stop(ctx, key("lanes")))
	err := <-returned
	require.Error(t, err)
	assert.True(t, errors.Is(err, supervisor.ErrStopped), "%v", err)
	assert.Empty(t, processesWith(t, tools), "the lane's process went with the server")
}

// A client's logging level reaches its lane at the start and when it
// changes; the server's messages reach that client only.
func TestALanePassesItsClientsLogLevelAndMessages(t *testing.T) {
	h := newHarness(t, supervisor.Options{})
	h.sup.SetClientSessions(key("lanes"), supervisor.ClientSessionsPerClient)
	h.ensure(t, key("lanes"), fake("-tools", askingTools, "-protocols", olderGeneration))
	alice, bob := newFakePeer("alice", everything), newFakePeer("bob", everything)
	alice.setLevel("info")
	_, err := callText(t, h.sup, peer.With(t.Context(), alice), "lanes", "log", map[string]any{"from": "a1"})
	require.NoError(t, err)
	_, err = callText(t, h.sup, peer.With(t.Context(), bob), "lanes", "log", map[string]any{"from": "b1"})
	require.NoError(t, err)
	alice.setLevel("error")
	require.Eventually(t, func() bool {
		_, err := callText(t, h.sup, peer.With(t.Context(), alice), "lanes", "log", map[string]any{"from": "a2"})
		require.NoError(t, err)
		alice.mu.Lock()
		defer alice.mu.Unlock()
		n := len(alice.logs)
		return n > 0 && alice.logs[n-1] == "error from a2"
	}, deadline, 20*time.Millisecond)
	alice.mu.Lock()
	assert.Equal(t, []string{"info from a1", "error from a1"}, alice.logs[:2], "at info: info and error")
	// The level reaches the lane's server on its own (watchLane): calls
	// made before it did log at info still. Once it has, error only.
	reached := slices.Index(alice.logs, "error from a2")
	for _, l := range alice.logs[reached:] {
		assert.Equal(t, "error from a2", l, "at error: error only")
	}
	alice.mu.Unlock()
	assert.Empty(t, bob.logs, "bob set no level: nothing")
}

// A shared server's log messages cannot be told apart by call: they go to
// every client that has called it, and the server sends at the most
// verbose level any of them asked for. Each client's session then applies
// its own level (package mcpserve's Log; the fake applies none).
func TestASharedServersLogMessagesReachTheClientsThatCalledIt(t *testing.T) {
	h := newHarness(t, supervisor.Options{})
	h.ensure(t, key("shared"), fake("-tools", askingTools, "-protocols", olderGeneration))
	alice, bob, stranger := newFakePeer("alice", everything), newFakePeer("bob", everything), newFakePeer("stranger", everything)
	alice.setLevel("info")
	bob.setLevel("error")
	_, err := callText(t, h.sup, peer.With(t.Context(), bob), "shared", "json", nil)
	require.NoError(t, err)
	_, err = callText(t, h.sup, peer.With(t.Context(), alice), "shared", "log", map[string]any{"from": "a"})
	require.NoError(t, err)
	logs := func(p *fakePeer) []string {
		p.mu.Lock()
		defer p.mu.Unlock()
		return append([]string(nil), p.logs...)
	}
	require.Eventually(t, func() bool { return len(logs(alice)) == 2 && len(logs(bob)) == 2 }, deadline, 10*time.Millisecond)
	// A mark after the messages above: once it is in, nothing of theirs is
	// still on its way.
	_, err = callText(t, h.sup, peer.With(t.Context(), alice), "shared", "log", map[string]any{"from": "mark", "levels": "error"})
	require.NoError(t, err)
	require.Eventually(t, func() bool { return len(logs(alice)) == 3 }, deadline, 10*time.Millisecond)
	assert.Equal(t, []string{"info from a", "error from a", "error from mark"}, logs(alice), "no debug: the server sends at info, the most verbose asked")
	assert.Equal(t, []string{"info from a", "error from a", "error from mark"}, logs(bob))
	assert.Empty(t, logs(stranger), "a client that never called the server hears nothing of it")
}

// A shared server's log messages reach its callers while they are one
// user's, in as many sessions as that user has; once another user has
// called it, a message may come of either's call, and reaches neither.
func TestASharedServersLogMessagesReachNoOtherUser(t *testing.T) {
	h := newHarness(t, supervisor.Options{})
	h.ensure(t, key("shared"), fake("-tools", askingTools, "-protocols", olderGeneration))
	alice1, alice2, bob := newFakePeer("alice1", everything), newFakePeer("alice2", everything), newFakePeer("bob", everything)
	for _, p := range []*fakePeer{alice1, alice2, bob} {
		p.setLevel("error")
	}
	as := func(user string, p *fakePeer) context.Context {
		return identity.With(peer.With(t.Context(), p), identity.Identity{Subject: user, Issuer: "https://idp"})
	}
	logs := func(p *fakePeer) []string {
		p.mu.Lock()
		defer p.mu.Unlock()
		return append([]string(nil), p.logs...)
	}
	_, err := callText(t, h.sup, as("alice", alice1), "shared", "log", map[string]any{"from": "a1", "levels": "error"})
	require.NoError(t, err)
	require.Eventually(t, func() bool { return len(logs(alice1)) == 1 }, deadline, 10*time.Millisecond)
	_, err = callText(t, h.sup, as("alice", alice2), "shared", "log", map[string]any{"from": "a2", "levels": "error"})
	require.NoError(t, err)
	require.Eventually(t, func() bool { return len(logs(alice2)) == 1 && len(logs(alice1)) == 2 }, deadline, 10*time.Millisecond)
	assert.Equal(t, []string{"error from a1", "error from a2"}, logs(alice1), "one user's sessions hear the server")
	assert.Equal(t, []string{"error from a2"}, logs(alice2))

	_, err = callText(t, h.sup, as("bob", bob), "shared", "json", nil)
	require.NoError(t, err)
	_, err = callText(t, h.sup, as("alice", alice1), "shared", "log", map[string]any{"from": "secret", "levels": "error"})
	require.NoError(t, err)
	require.Eventually(t, func() bool { return strings.Contains(h.logs.String(), "log messages are withheld") }, deadline, 10*time.Millisecond,
		"the message is withheld, and musterd's log says so")
	// Bob gone, alice's marks reach her again.
	close(bob.done)
	require.Eventually(t, func() bool {
		_, err := callText(t, h.sup, as("alice", alice1), "shared", "log", map[string]any{"from": "mark", "levels": "error"})
		return err == nil && slices.Contains(logs(alice1), "error from mark")
	}, deadline, 50*time.Millisecond)
	assert.Empty(t, logs(bob), "bob hears nothing of alice's call")
	assert.NotContains(t, logs(alice1), "error from secret", "nor alice, while bob called the server too")
}
