package supervisor_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/oauth2"

	"github.com/musterd/musterd/pkg/apis/muster/v1alpha1"
	"github.com/musterd/musterd/pkg/events"
	"github.com/musterd/musterd/pkg/identity"
	"github.com/musterd/musterd/pkg/supervisor"
)

// The tokens the protected mcp-fake of these tests takes, by user: alice
// has two (her refreshed token is the second), bob one.
const (
	aliceToken     = "tok-alice-first-0123456789"
	aliceRefreshed = "tok-alice-second-0123456789"
	bobToken       = "tok-bob-0123456789"
	revokedToken   = "tok-revoked-0123456789"
)

var allTokens = []string{aliceToken, aliceRefreshed, bobToken, revokedToken}

// protectedServer starts mcp-fake taking the users' tokens, with tools,
// and has h run it: Auth Required, since musterd has no token of its own.
func protectedServer(t *testing.T, h *harness, name string, tools string) (events.Key, v1alpha1.MCPServerSpec) {
	t.Helper()
	url, _ := startHTTPFake(t, "-tools", tools,
		"-bearer-users", "alice="+aliceToken+",alice="+aliceRefreshed+",bob="+bobToken)
	k, spec := key(name), remote(v1alpha1.MCPServerTypeStreamableHTTP, url)
	require.Equal(t, v1alpha1.MCPServerStateAuthRequired, h.ensure(t, k, spec).State)
	return k, spec
}

// tokens is a user's token source a test switches: each Token gives the
// next of its tokens, the last for good.
type tokens struct {
	mu    sync.Mutex
	queue []string
	asked int
}

func tokensOf(queue ...string) *tokens { return &tokens{queue: queue} }

func (s *tokens) Token() (*oauth2.Token, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.asked++
	tok := s.queue[0]
	if len(s.queue) > 1 {
		s.queue = s.queue[1:]
	}
	return &oauth2.Token{AccessToken: tok, TokenType: "Bearer", Expiry: time.Now().Add(time.Hour)}, nil
}

// set makes tok the token from now on.
func (s *tokens) set(tok string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.queue = []string{tok}
}

func (s *tokens) timesAsked() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.asked
}

// userChange is one OnUserChange call.
type userChange struct {
	conn supervisor.UserObserved
	gone bool
}

// userRecorder keeps every OnUserChange call.
type userRecorder struct {
	mu      sync.Mutex
	changes []userChange
}

func (r *userRecorder) onUserChange(conn supervisor.UserObserved, gone bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.changes = append(r.changes, userChange{conn, gone})
}

func (r *userRecorder) all() []userChange {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.changes)
}

// of is what was reported of owner's connections: "open TOOLS" for each
// opening or relisting, "gone" or "gone (token refused)" for each end.
func (r *userRecorder) of(owner string) []string {
	var out []string
	for _, c := range r.all() {
		if c.conn.Owner != owner {
			continue
		}
		switch {
		case c.gone && c.conn.TokenRefused:
			out = append(out, "gone (token refused)")
		case c.gone:
			out = append(out, "gone")
		default:
			names := make([]string, len(c.conn.Tools))
			for i, tool := range c.conn.Tools {
				names[i] = tool.Name
			}
			out = append(out, "open "+strings.Join(names, ","))
		}
	}
	return out
}

// waitFor polls until what was reported of owner is want.
func (r *userRecorder) waitFor(t *testing.T, owner string, want ...string) {
	t.Helper()
	require.Eventually(t, func() bool { return slices.Equal(r.of(owner), want) }, deadline, 5*time.Millisecond,
		"reports of %s: want %q", owner, want)
	assert.Equal(t, want, r.of(owner))
}

func newUserHarness(t *testing.T, opts supervisor.Options) (*harness, *userRecorder) {
	users := &userRecorder{}
	opts.OnUserChange = users.onUserChange
	return newHarness(t, opts), users
}

// ownerOf is subject's owner, as a call from subject (as) has it.
func ownerOf(subject string) string { return identity.Identity{Subject: subject}.Owner() }

// as is a call's context, from subject.
func as(t *testing.T, subject string) context.Context {
	return identity.With(callCtx(t), identity.Identity{Subject: subject})
}

func whoami(t *testing.T, h *harness, ctx context.Context, k events.Key) (string, error) {
	t.Helper()
	res, err := h.sup.CallTool(ctx, k, &mcp.CallToolParams{Name: "whoami"}, nil)
	if err != nil {
		return "", err
	}
	return text(t, res), nil
}

// noTokenIn fails if any token appears in what.
func noTokenIn(t *testing.T, what string) {
	t.Helper()
	for _, tok := range allTokens {
		assert.NotContains(t, what, tok)
	}
}

// Two users, each with a connection of their own to the same protected
// server: each one's calls carry that user's token, and nobody else's.
// The shared instance stays Auth Required, and a caller with no
// connection is told to log in.
func TestEachUserGetsAConnectionOfTheirOwnCarryingTheirToken(t *testing.T) {
	t.Parallel()
	h, users := newUserHarness(t, supervisor.Options{})
	k, _ := protectedServer(t, h, "protected", "whoami,echo")
	shared, _ := h.sup.Get(k)

	alice, bob := tokensOf(aliceToken), tokensOf(bobToken)
	conn, err := h.sup.ConnectAs(callCtx(t), k, ownerOf("alice"), alice)
	require.NoError(t, err)
	assert.Equal(t, ownerOf("alice"), conn.Owner)
	assert.Equal(t, k, conn.Key)
	require.Len(t, conn.Tools, 2)
	assert.Equal(t, "echo", conn.Tools[0].Name, "sorted by name")
	assert.NotNil(t, conn.Init)
	assert.False(t, conn.ListedAt.IsZero())
	_, err = h.sup.ConnectAs(callCtx(t), k, ownerOf("bob"), bob)
	require.NoError(t, err)
	again, err := h.sup.ConnectAs(callCtx(t), k, ownerOf("alice"), alice)
	require.NoError(t, err)
	assert.Equal(t, conn.ConnectedAt, again.ConnectedAt, "the open one")

	got, err := whoami(t, h, as(t, "alice"), k)
	require.NoError(t, err)
	assert.Equal(t, "alice "+aliceToken, got)
	got, err = whoami(t, h, as(t, "bob"), k)
	require.NoError(t, err)
	assert.Equal(t, "bob "+bobToken, got)

	// Every call path goes to the caller's own connection.
	_, err = h.sup.ListResources(as(t, "alice"), k)
	require.NoError(t, err, "alice's own connection answers")
	_, err = h.sup.ListPrompts(as(t, "bob"), k)
	require.NoError(t, err, "bob's own connection answers")

	// carol has none, nor has a caller who is nobody.
	for _, ctx := range []context.Context{as(t, "carol"), callCtx(t)} {
		_, err = whoami(t, h, ctx, k)
		require.ErrorIs(t, err, supervisor.ErrAuthorizationRequired)
		assert.EqualError(t, err, "mcp server protected: authorization required: log in with core_auth_login")
		_, err = h.sup.ListResources(ctx, k)
		require.ErrorIs(t, err, supervisor.ErrAuthorizationRequired)
	}

	users.waitFor(t, ownerOf("alice"), "open echo,whoami")
	users.waitFor(t, ownerOf("bob"), "open echo,whoami")
	mine, ok := h.sup.UserConnection(k, ownerOf("alice"))
	require.True(t, ok)
	assert.Equal(t, conn.ConnectedAt, mine.ConnectedAt)
	_, ok = h.sup.UserConnection(k, ownerOf("carol"))
	assert.False(t, ok)
	owners := []string{}
	for _, c := range h.sup.UserConnections(k) {
		owners = append(owners, c.Owner)
	}
	assert.Equal(t, []string{ownerOf("alice"), ownerOf("bob")}, owners)

	now, _ := h.sup.Get(k)
	assert.Equal(t, shared, now, "the shared instance's Observed is untouched")
	assert.Equal(t, []v1alpha1.MCPServerState{v1alpha1.MCPServerStateConnecting, v1alpha1.MCPServerStateConnecting,
		v1alpha1.MCPServerStateAuthRequired}, h.rec.states(k), "no change of the server's for its users' connections")
	noTokenIn(t, h.logs.String())
	noTokenIn(t, fmt.Sprintf("%+v %+v", h.sup.UserConnections(k), users.all()))
}

// A token the source refreshed is the one the next request carries, on
// the same connection.
func TestARefreshedTokenIsUsedFromTheNextRequestOn(t *testing.T) {
	t.Parallel()
	h, users := newUserHarness(t, supervisor.Options{})
	k, _ := protectedServer(t, h, "refreshing", "whoami")
	alice := tokensOf(aliceToken)
	_, err := h.sup.ConnectAs(callCtx(t), k, ownerOf("alice"), alice)
	require.NoError(t, err)
	got, err := whoami(t, h, as(t, "alice"), k)
	require.NoError(t, err)
	assert.Equal(t, "alice "+aliceToken, got)

	alice.set(aliceRefreshed)
	got, err = whoami(t, h, as(t, "alice"), k)
	require.NoError(t, err)
	assert.Equal(t, "alice "+aliceRefreshed, got)
	users.waitFor(t, ownerOf("alice"), "open whoami")
}

// A 401 is settled by asking the source again: a token other than the
// refused one gets the request one more try.
func TestA401GetsOneMoreTryWithTheTokenTheSourceGivesWhenAskedAgain(t *testing.T) {
	t.Parallel()
	h, users := newUserHarness(t, supervisor.Options{})
	k, _ := protectedServer(t, h, "stale", "whoami")
	alice := tokensOf(revokedToken, aliceToken) // refused once, then a good one
	_, err := h.sup.ConnectAs(callCtx(t), k, ownerOf("alice"), alice)
	require.NoError(t, err)
	got, err := whoami(t, h, as(t, "alice"), k)
	require.NoError(t, err)
	assert.Equal(t, "alice "+aliceToken, got)
	users.waitFor(t, ownerOf("alice"), "open whoami")
}

// A source that gives a token the server refuses, when asked again too,
// ends the connection: reported gone, and the call fails telling the user
// to log in again, as do the calls after it.
func TestARevokedTokenEndsTheConnectionAndTheCallAsksForALogin(t *testing.T) {
	t.Parallel()
	h, users := newUserHarness(t, supervisor.Options{PingInterval: time.Hour})
	k, _ := protectedServer(t, h, "revoking", "whoami")
	alice, bob := tokensOf(aliceToken), tokensOf(bobToken)
	_, err := h.sup.ConnectAs(callCtx(t), k, ownerOf("alice"), alice)
	require.NoError(t, err)
	_, err = h.sup.ConnectAs(callCtx(t), k, ownerOf("bob"), bob)
	require.NoError(t, err)

	alice.set(revokedToken)
	asked := alice.timesAsked()
	_, err = whoami(t, h, as(t, "alice"), k)
	require.ErrorIs(t, err, supervisor.ErrAuthorizationRequired)
	assert.Contains(t, err.Error(), "mcp server revoking: authorization required: log in with core_auth_login")
	assert.GreaterOrEqual(t, alice.timesAsked()-asked, 2, "the source is asked again before the token is given up")
	noTokenIn(t, err.Error())

	users.waitFor(t, ownerOf("alice"), "open whoami", "gone (token refused)")
	_, ok := h.sup.UserConnection(k, ownerOf("alice"))
	assert.False(t, ok)
	_, err = whoami(t, h, as(t, "alice"), k)
	require.ErrorIs(t, err, supervisor.ErrAuthorizationRequired, "no connection now")

	got, err := whoami(t, h, as(t, "bob"), k)
	require.NoError(t, err, "bob's connection is his own")
	assert.Equal(t, "bob "+bobToken, got)
	users.waitFor(t, ownerOf("bob"), "open whoami")
	gone := users.all()
	last := gone[len(gone)-1]
	for _, c := range gone {
		if c.gone {
			last = c
		}
	}
	assert.Contains(t, last.conn.Ended, "the server refused the user's token")
	noTokenIn(t, h.logs.String())
	noTokenIn(t, fmt.Sprintf("%+v", users.all()))
}

// A token the server refuses at once is no connection.
func TestAConnectionWhoseTokenIsRefusedAtOnceIsNotKept(t *testing.T) {
	t.Parallel()
	h, users := newUserHarness(t, supervisor.Options{})
	k, spec := protectedServer(t, h, "refusing", "whoami")
	_, err := h.sup.ConnectAs(callCtx(t), k, ownerOf("alice"), tokensOf(revokedToken))
	authErr, ok := errors.AsType[*supervisor.AuthRequiredError](err)
	require.True(t, ok, "%v", err)
	assert.Equal(t, spec.URL, authErr.URL)
	assert.Contains(t, authErr.Error(), "answered 401 Unauthorized")
	assert.Contains(t, authErr.Error(), "it refused the user's token")
	assert.NotEmpty(t, authErr.ResourceMetadata)
	noTokenIn(t, err.Error())
	_, ok = h.sup.UserConnection(k, ownerOf("alice"))
	assert.False(t, ok)
	assert.Empty(t, users.all())
	noTokenIn(t, h.logs.String())
}

// DisconnectAs ends a connection: its calls under way fail as stopped.
func TestDisconnectAsEndsTheConnectionAndItsCallsUnderWay(t *testing.T) {
	t.Parallel()
	h, users := newUserHarness(t, supervisor.Options{})
	k, _ := protectedServer(t, h, "leaving", "whoami,sleep,sleeps")
	_, err := h.sup.ConnectAs(callCtx(t), k, ownerOf("alice"), tokensOf(aliceToken))
	require.NoError(t, err)

	type failure struct{ err error }
	failed := make(chan failure, 1)
	go func() {
		_, err := h.sup.CallTool(as(t, "alice"), k, &mcp.CallToolParams{Name: "sleep", Arguments: map[string]any{"ms": 60000}}, nil)
		failed <- failure{err}
	}()
	// The sleep is under way once the server says it runs.
	require.Eventually(t, func() bool {
		res, err := h.sup.CallTool(as(t, "alice"), k, &mcp.CallToolParams{Name: "sleeps"}, nil)
		return err == nil && strings.Contains(text(t, res), `"running":1`)
	}, deadline, 5*time.Millisecond)
	h.sup.DisconnectAs(callCtx(t), k, ownerOf("alice"))
	select {
	case f := <-failed:
		require.ErrorIs(t, f.err, supervisor.ErrStopped)
		assert.Contains(t, f.err.Error(), "its user disconnected")
	case <-time.After(deadline):
		t.Fatal("the call under way did not end")
	}
	users.waitFor(t, ownerOf("alice"), "open sleep,sleeps,whoami", "gone")
	_, ok := h.sup.UserConnection(k, ownerOf("alice"))
	assert.False(t, ok)
	_, err = whoami(t, h, as(t, "alice"), k)
	require.ErrorIs(t, err, supervisor.ErrAuthorizationRequired)
}

// Stop ends every user connection of its server, and so does a change of
// its spec.
func TestStopAndASpecChangeEndTheServersUserConnections(t *testing.T) {
	t.Parallel()
	h, users := newUserHarness(t, supervisor.Options{})
	k, spec := protectedServer(t, h, "ending", "whoami")
	for _, owner := range []string{ownerOf("alice"), ownerOf("bob")} {
		tok := aliceToken
		if owner == ownerOf("bob") {
			tok = bobToken
		}
		_, err := h.sup.ConnectAs(callCtx(t), k, owner, tokensOf(tok))
		require.NoError(t, err)
	}
	spec.Timeout++ // a field that matters
	h.ensure(t, k, spec)
	users.waitFor(t, ownerOf("alice"), "open whoami", "gone")
	users.waitFor(t, ownerOf("bob"), "open whoami", "gone")
	assert.Empty(t, h.sup.UserConnections(k))

	_, err := h.sup.ConnectAs(callCtx(t), k, ownerOf("alice"), tokensOf(aliceToken))
	require.NoError(t, err, "a connection to the new spec")
	require.NoError(t, h.sup.Stop(callCtx(t), k))
	users.waitFor(t, ownerOf("alice"), "open whoami", "gone", "open whoami", "gone")
	_, ok := h.sup.UserConnection(k, ownerOf("alice"))
	assert.False(t, ok)
	_, err = h.sup.ConnectAs(callCtx(t), k, ownerOf("alice"), tokensOf(aliceToken))
	require.ErrorIs(t, err, supervisor.ErrNotRunning, "a stopped server takes no user connection")
}

// A user connection whose server goes away ends, reported gone: as its
// session ends (pings an hour apart cannot tell), or as a ping goes
// unanswered (a server that hangs keeps its connections).
func TestAUserConnectionWhoseServerGoesAwayEnds(t *testing.T) {
	t.Parallel()
	t.Run("its session ends", func(t *testing.T) {
		t.Parallel()
		h, users := newUserHarness(t, supervisor.Options{PingInterval: time.Hour})
		url, server := startHTTPFake(t, "-tools", "whoami", "-bearer-users", "alice="+aliceToken)
		k := key("vanishing")
		require.Equal(t, v1alpha1.MCPServerStateAuthRequired, h.ensure(t, k, remote(v1alpha1.MCPServerTypeStreamableHTTP, url)).State)
		_, err := h.sup.ConnectAs(callCtx(t), k, ownerOf("alice"), tokensOf(aliceToken))
		require.NoError(t, err)
		require.NoError(t, server.Process.Kill())
		users.waitFor(t, ownerOf("alice"), "open whoami", "gone")
		_, ok := h.sup.UserConnection(k, ownerOf("alice"))
		assert.False(t, ok)
	})
	t.Run("it stops answering", func(t *testing.T) {
		t.Parallel()
		h, users := newUserHarness(t, supervisor.Options{PingInterval: 50 * time.Millisecond, PingTimeout: 200 * time.Millisecond})
		// Time enough to connect first, on a loaded machine.
		url, _ := startHTTPFake(t, "-tools", "whoami", "-bearer-users", "alice="+aliceToken, "-hang-after", "3s")
		k := key("hanging")
		require.Equal(t, v1alpha1.MCPServerStateAuthRequired, h.ensure(t, k, remote(v1alpha1.MCPServerTypeStreamableHTTP, url)).State)
		_, err := h.sup.ConnectAs(callCtx(t), k, ownerOf("alice"), tokensOf(aliceToken))
		require.NoError(t, err)
		users.waitFor(t, ownerOf("alice"), "open whoami", "gone")
		gone := users.all()[1].conn
		assert.Contains(t, gone.Ended, "health ping failed")
		assert.False(t, gone.TokenRefused)
	})
}

// A user connection lists its tools again when its server says they
// changed, and reports the listing.
func TestAUserConnectionRelistsItsToolsWhenTheyChange(t *testing.T) {
	t.Parallel()
	h, users := newUserHarness(t, supervisor.Options{})
	k, _ := protectedServer(t, h, "growing", "whoami,add_tool")
	first, err := h.sup.ConnectAs(callCtx(t), k, ownerOf("alice"), tokensOf(aliceToken))
	require.NoError(t, err)
	_, err = h.sup.CallTool(as(t, "alice"), k, &mcp.CallToolParams{Name: "add_tool", Arguments: map[string]any{"name": "extra"}}, nil)
	require.NoError(t, err)
	users.waitFor(t, ownerOf("alice"), "open add_tool,whoami", "open add_tool,extra,whoami")
	now, ok := h.sup.UserConnection(k, ownerOf("alice"))
	require.True(t, ok)
	assert.True(t, now.ListedAt.After(first.ListedAt))
	assert.Equal(t, first.ConnectedAt, now.ConnectedAt)
	res, err := h.sup.CallTool(as(t, "alice"), k, &mcp.CallToolParams{Name: "extra"}, nil)
	require.NoError(t, err)
	assert.Equal(t, "extra {}", text(t, res))
}

// What a user connection is not for.
func TestConnectAsRefusesWhatItIsNotFor(t *testing.T) {
	t.Parallel()
	h, _ := newUserHarness(t, supervisor.Options{MaxUserConnectionsPerServer: 1})
	_, err := h.sup.ConnectAs(callCtx(t), key("unknown"), ownerOf("alice"), tokensOf(aliceToken))
	require.ErrorIs(t, err, supervisor.ErrNotRunning)

	local := key("local")
	h.ensure(t, local, fake())
	_, err = h.sup.ConnectAs(callCtx(t), local, ownerOf("alice"), tokensOf(aliceToken))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "a user connection is for a remote server (streamable-http, sse)")

	k, _ := protectedServer(t, h, "crowded", "whoami")
	_, err = h.sup.ConnectAs(callCtx(t), k, ownerOf("alice"), tokensOf(aliceToken))
	require.NoError(t, err)
	_, err = h.sup.ConnectAs(callCtx(t), k, ownerOf("bob"), tokensOf(bobToken))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "MaxUserConnectionsPerServer")
}

// The server's questions to its client on a user connection are refused,
// saying why.
func TestAServersQuestionOnAUserConnectionIsRefused(t *testing.T) {
	t.Parallel()
	h, _ := newUserHarness(t, supervisor.Options{})
	for _, protocols := range []string{"2025-11-25", ""} {
		url, _ := startHTTPFake(t, "-tools", "roots", "-bearer-users", "alice="+aliceToken, "-protocols", protocols)
		k := key("asking" + strings.ReplaceAll(protocols, "-", ""))
		require.Equal(t, v1alpha1.MCPServerStateAuthRequired, h.ensure(t, k, remote(v1alpha1.MCPServerTypeStreamableHTTP, url)).State)
		_, err := h.sup.ConnectAs(callCtx(t), k, ownerOf("alice"), tokensOf(aliceToken))
		require.NoError(t, err)
		res, err := h.sup.CallTool(as(t, "alice"), k, &mcp.CallToolParams{Name: "roots"}, nil)
		said := fmt.Sprint(err)
		if err == nil {
			said = text(t, res)
		}
		assert.Contains(t, said, "roots/list refused: it came on a user's own connection to MCP server "+k.Name, "protocols %q", protocols)
	}
}
