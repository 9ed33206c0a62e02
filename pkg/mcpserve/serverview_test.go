package mcpserve

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/musterd/musterd/pkg/events"
	"github.com/musterd/musterd/pkg/router"
)

// viewBackend is a Backend with one server's view, whose offer the test
// sets.
type viewBackend struct {
	*fakeBackend
	mu    sync.Mutex
	offer router.ServerOffer
	err   error
	calls []string
}

func (b *viewBackend) set(offer router.ServerOffer, err error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.offer, b.err = offer, err
}

func (b *viewBackend) Server(key events.Key) (router.ServerOffer, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if key != b.offer.Key {
		return router.ServerOffer{}, router.ErrServerNotDeclared
	}
	return b.offer, b.err
}

func (b *viewBackend) CallServerTool(_ context.Context, key events.Key, name string, args map[string]any, _ func(*mcp.ProgressNotificationParams)) (*mcp.CallToolResult, error) {
	b.mu.Lock()
	b.calls = append(b.calls, key.Name+"/"+name)
	b.mu.Unlock()
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: name + " at " + key.Name}}}, nil
}

func (b *viewBackend) ReadServerResource(context.Context, events.Key, string) (*mcp.ReadResourceResult, error) {
	return &mcp.ReadResourceResult{}, nil
}

func (b *viewBackend) GetServerPrompt(context.Context, events.Key, string, map[string]string) (*mcp.GetPromptResult, error) {
	return &mcp.GetPromptResult{}, nil
}

func (b *viewBackend) CompleteServer(_ context.Context, key events.Key, params *mcp.CompleteParams) (*mcp.CompleteResult, error) {
	return &mcp.CompleteResult{Completion: mcp.CompletionResultDetails{Values: []string{key.Name + ":" + params.Argument.Value + "1"}}}, nil
}

func initResult(name, instructions string) *mcp.InitializeResult {
	return &mcp.InitializeResult{ServerInfo: &mcp.Implementation{Name: name, Version: "1"}, Instructions: instructions,
		Capabilities: &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{ListChanged: true}, Completions: &mcp.CompletionCapabilities{}}}
}

// A server's view follows its offer: tools added and removed with Refresh
// are what its sessions list; a server that answered initialize
// otherwise since gets a new view, whose old sessions are closed.
func TestAServersViewFollowsItsOffer(t *testing.T) {
	key := events.NewKey("MCPServer", "default", "git")
	b := &viewBackend{fakeBackend: &fakeBackend{call: echo}}
	b.set(router.ServerOffer{Key: key, Init: initResult("git-server", "Use log first"), Tools: []*mcp.Tool{echoTool("log")}}, nil)
	srv, err := New(Options{Backend: b, Logger: quiet()})
	require.NoError(t, err)
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(ts.Close)
	connect := func() *mcp.ClientSession {
		c := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "0"}, nil)
		cs, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: ts.URL + "/mcp/servers/git"},
			&mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
		require.NoError(t, err)
		t.Cleanup(func() { _ = cs.Close() })
		return cs
	}
	cs := connect()
	init := cs.InitializeResult()
	assert.Equal(t, "git-server", init.ServerInfo.Name, "the server's own serverInfo")
	assert.Equal(t, "Use log first", init.Instructions)
	assert.NotNil(t, init.Capabilities.Completions, "the server's own capabilities")
	done, err := cs.Complete(context.Background(), &mcp.CompleteParams{Ref: &mcp.CompleteReference{Type: "ref/prompt", Name: "p"},
		Argument: mcp.CompleteParamsArgument{Name: "a", Value: "v"}})
	require.NoError(t, err)
	assert.Equal(t, []string{"git:v1"}, done.Completion.Values, "completion/complete reaches the server")
	assert.Equal(t, []string{"log"}, listNames(t, cs))
	assert.Equal(t, "log at git", text(t, call(t, cs, "log", map[string]any{"message": "m"})))

	b.set(router.ServerOffer{Key: key, Init: b.offer.Init, Tools: []*mcp.Tool{echoTool("diff")}}, nil)
	srv.Refresh()
	assert.Equal(t, []string{"diff"}, listNames(t, cs), "a tool came and one went")

	b.set(router.ServerOffer{Key: key, Init: initResult("git-server", "Use diff first"), Tools: []*mcp.Tool{echoTool("diff")}}, nil)
	srv.Refresh()
	_, err = cs.ListTools(context.Background(), nil)
	assert.Error(t, err, "a server restarted with other instructions: the old view's sessions are closed")
	assert.Equal(t, "Use diff first", connect().InitializeResult().Instructions)
}

// A view's server that is not declared, or does not run, is answered with
// an error naming it; a session open already still reaches its view.
func TestAServersViewNamesAServerThatIsNotThere(t *testing.T) {
	key := events.NewKey("MCPServer", "ops", "git")
	b := &viewBackend{fakeBackend: &fakeBackend{call: echo}}
	b.set(router.ServerOffer{Key: key, Init: initResult("git-server", ""), Tools: []*mcp.Tool{echoTool("log")}}, nil)
	srv, err := New(Options{Backend: b, Logger: quiet()})
	require.NoError(t, err)
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(ts.Close)
	post := func(path, session string) (int, string) {
		req, _ := http.NewRequest(http.MethodPost, ts.URL+path, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if session != "" {
			req.Header.Set(sessionHeader, session)
		}
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		data, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(data)
	}
	code, body := post("/mcp/servers/nobody", "")
	assert.Equal(t, http.StatusNotFound, code, body)
	code, body = post("/mcp/servers/", "")
	assert.Equal(t, http.StatusNotFound, code, body)

	c := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "0"}, nil)
	cs, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: ts.URL + "/mcp/servers/ops/git"}, &mcp.ClientSessionOptions{ProtocolVersion: latestLegacy})
	require.NoError(t, err, "a server of another namespace, named with it")
	t.Cleanup(func() { _ = cs.Close() })

	b.set(b.offer, &router.ServerDownError{Key: key, State: "Failed", LastError: "exit status 3"})
	code, body = post("/mcp/servers/ops/git", "")
	assert.Equal(t, http.StatusServiceUnavailable, code, body)
	assert.Contains(t, body, "MCPServer/ops/git is not running (state Failed): exit status 3")
	assert.Equal(t, "log at git", text(t, call(t, cs, "log", nil)), "a session open already reaches its view")

	b.set(b.offer, router.ErrServerNotDeclared)
	code, body = post("/mcp/servers/ops/git", cs.ID())
	assert.Equal(t, http.StatusNotFound, code, "its definition deleted: the view is gone, sessions and all: %s", body)
	_, err = cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "log"})
	assert.Error(t, err, "the session of a deleted server's view is closed")
}
