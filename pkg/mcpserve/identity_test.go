package mcpserve

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/musterd/musterd/pkg/identity"
)

// tokens is an Authenticator over a fixed map of tokens to users.
type tokens map[string]identity.Identity

func (t tokens) Authenticate(r *http.Request) (identity.Identity, *identity.Challenge) {
	if who, ok := t[strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")]; ok {
		return who, nil
	}
	return identity.Identity{}, &identity.Challenge{Status: http.StatusUnauthorized,
		WWWAuthenticate: `Bearer resource_metadata="http://musterd.test/.well-known/oauth-protected-resource"`, Reason: "Missing Authorization header"}
}

// twoUsers is an endpoint whose Authenticator knows alice-token and
// bob-token, offering x_fake_echo, whose calls say who made them.
func twoUsers(t *testing.T) (*harness, chan identity.Identity) {
	t.Helper()
	alice := identity.Identity{Subject: "alice", Issuer: "https://idp.test"}
	bob := identity.Identity{Subject: "bob", Issuer: "https://idp.test"}
	h := newHarness(t, func(s *setup) {
		s.Authenticator = tokens{"alice-token": alice, "bob-token": bob}
	})
	callers := make(chan identity.Identity, 4)
	h.backend.call = func(ctx context.Context, _ string, _ map[string]any, _ func(*mcp.ProgressNotificationParams)) (*mcp.CallToolResult, error) {
		who, _ := identity.From(ctx)
		callers <- who
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ok"}}}, nil
	}
	h.backend.setTools(echoTool("x_fake_echo"))
	h.srv.Refresh()
	return h, callers
}

// With an Authenticator, a request without a credential gets its
// challenge; a user's calls carry the user's identity, on top of the
// session; and a session is its user's alone: another user's request on
// it is refused.
func TestTheAuthenticatorNamesTheCallerAndBindsTheSession(t *testing.T) {
	h, callers := twoUsers(t)

	resp, err := http.Post(h.url+PathDirect, "application/json", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	assert.Equal(t, http.StatusUnauthorized, resp.StatusCode)
	assert.Equal(t, `Bearer resource_metadata="http://musterd.test/.well-known/oauth-protected-resource"`, resp.Header.Get("WWW-Authenticate"))
	assert.Contains(t, string(body), "Missing Authorization header")

	c := mcp.NewClient(&mcp.Implementation{Name: "alice", Version: "0"}, nil)
	cs, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: h.url + PathDirect,
		HTTPClient: &http.Client{Transport: bearerTransport{token: "alice-token", next: http.DefaultTransport}}}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	require.NoError(t, err)
	t.Cleanup(func() { _ = cs.Close() })
	_, err = cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "x_fake_echo", Arguments: map[string]any{"message": "hi"}})
	require.NoError(t, err)
	who := <-callers
	assert.Equal(t, "alice", who.Subject)
	assert.Equal(t, cs.ID(), who.Session, "the call's session is the client's MCP session")

	// Bob, with alice's session ID.
	req, err := http.NewRequest(http.MethodPost, h.url+PathDirect, strings.NewReader(
		`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"x_fake_echo","arguments":{"message":"as alice"}}}`))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer bob-token")
	req.Header.Set("Mcp-Session-Id", cs.ID())
	req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err = http.DefaultClient.Do(req)
	require.NoError(t, err)
	body, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	assert.Equal(t, http.StatusForbidden, resp.StatusCode, string(body))
	var answer struct {
		Error struct{ Message string } `json:"error"`
	}
	require.NoError(t, json.Unmarshal(body, &answer), string(body))
	assert.Contains(t, answer.Error.Message, "session user mismatch")
	select {
	case got := <-callers:
		t.Fatalf("bob's request reached the tool as %+v", got)
	default:
	}
}

// recordPosts notes the URLs a client posts to.
type recordPosts struct {
	mu   sync.Mutex
	urls []string
	next http.RoundTripper
}

func (r *recordPosts) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Method == http.MethodPost {
		r.mu.Lock()
		r.urls = append(r.urls, req.URL.String())
		r.mu.Unlock()
	}
	return r.next.RoundTrip(req)
}

// An SSE session is its user's alone too: another user posting to it,
// with a good token of their own, is refused, and nothing runs.
func TestAnSSESessionIsItsUsersAlone(t *testing.T) {
	h, callers := twoUsers(t)

	rec := &recordPosts{next: bearerTransport{token: "alice-token", next: http.DefaultTransport}}
	c := mcp.NewClient(&mcp.Implementation{Name: "alice", Version: "0"}, nil)
	cs, err := c.Connect(context.Background(), &mcp.SSEClientTransport{Endpoint: h.url + PathSSE, HTTPClient: &http.Client{Transport: rec}}, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = cs.Close() })
	rec.mu.Lock()
	endpoint := rec.urls[0]
	rec.mu.Unlock()

	req, err := http.NewRequest(http.MethodPost, endpoint, strings.NewReader(
		`{"jsonrpc":"2.0","id":77,"method":"tools/call","params":{"name":"call_tool","arguments":{"name":"x_fake_echo","arguments":{"message":"as alice"}}}}`))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer bob-token")
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	assert.Equal(t, http.StatusForbidden, resp.StatusCode, string(body))

	// Alice's own call runs, as alice; bob's never did.
	_, err = cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "call_tool", Arguments: map[string]any{"name": "x_fake_echo", "arguments": map[string]any{"message": "hi"}}})
	require.NoError(t, err)
	assert.Equal(t, "alice", (<-callers).Subject)
	select {
	case who := <-callers:
		t.Fatalf("another call ran, as %q", who.Subject)
	default:
	}
}
