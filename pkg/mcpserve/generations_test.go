package mcpserve

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/musterd/musterd/pkg/events"
	"github.com/musterd/musterd/pkg/peer"
	"github.com/musterd/musterd/pkg/router"
)

// schema2020 is a tool's input schema in JSON Schema 2020-12, with what
// the older drafts lack ($defs, prefixItems, a $ref beside siblings).
const schema2020 = `{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object",` +
	`"$defs":{"word":{"type":"string","minLength":1}},` +
	`"properties":{"message":{"$ref":"#/$defs/word","description":"what to echo"},` +
	`"pair":{"type":"array","prefixItems":[{"type":"string"},{"type":"integer"}],"items":false}},` +
	`"required":["message"],"additionalProperties":false}`

// generationsSetup serves /mcp, /mcp/direct and /mcp/servers/git: the
// server git offers one tool, log, with a 2020-12 schema, exposed on
// /mcp/direct as git_log.
func generationsSetup(t *testing.T, opts Options) (url string, b *viewBackend) {
	t.Helper()
	var schema map[string]any
	require.NoError(t, json.Unmarshal([]byte(schema2020), &schema))
	key := events.NewKey("MCPServer", "default", "git")
	b = &viewBackend{fakeBackend: &fakeBackend{call: echo}}
	b.setTools(&mcp.Tool{Name: "git_log", InputSchema: schema})
	b.set(router.ServerOffer{Key: key, Init: initResult("git-server", "Use log first"), Tools: []*mcp.Tool{{Name: "log", InputSchema: schema}}}, nil)
	opts.Backend, opts.Logger = b, quiet()
	srv, err := New(opts)
	require.NoError(t, err)
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(ts.Close)
	return ts.URL, b
}

// Every streamable view answers a client of either generation, on one
// endpoint: the go-sdk's client of the newest (its default) discovers the
// view and calls without a session, one pinned to 2025-11-25 initializes a
// session; both list and call the same tools, whose 2020-12 schemas pass
// verbatim.
func TestEveryViewAnswersClientsOfBothGenerations(t *testing.T) {
	url, b := generationsSetup(t, Options{})
	for _, path := range []string{PathMCP, PathDirect, PathServers + "git"} {
		for _, version := range []string{newestProtocol, latestLegacy} {
			c := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "0"}, nil)
			cs, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: url + path},
				&mcp.ClientSessionOptions{ProtocolVersion: version})
			require.NoError(t, err, "%s at %s", path, version)
			init := cs.InitializeResult()
			assert.Equal(t, version, init.ProtocolVersion, path)
			if version == newestProtocol {
				assert.Empty(t, cs.ID(), "%s: no session in the newest generation", path)
			} else {
				assert.NotEmpty(t, cs.ID(), "%s: a session in the older generation", path)
			}

			var tools []*mcp.Tool
			for tool, err := range cs.Tools(context.Background(), nil) {
				require.NoError(t, err, "%s at %s", path, version)
				tools = append(tools, tool)
			}
			switch path {
			case PathMCP:
				assert.Equal(t, ServerName, init.ServerInfo.Name)
				require.Len(t, tools, 11, "the meta-tools")
				res := call(t, cs, "call_tool", map[string]any{"name": "git_log", "arguments": map[string]any{"message": "m"}})
				assert.Contains(t, text(t, res), "git_log: m", "%s at %s", path, version)
			case PathDirect:
				require.Len(t, tools, 1)
				assertSchemaVerbatim(t, tools[0], path)
				assert.Equal(t, "git_log: m", text(t, call(t, cs, "git_log", map[string]any{"message": "m"})), "%s at %s", path, version)
			default:
				assert.Equal(t, "git-server", init.ServerInfo.Name, "the server's own serverInfo")
				assert.Equal(t, "Use log first", init.Instructions)
				require.Len(t, tools, 1)
				assertSchemaVerbatim(t, tools[0], path)
				assert.Equal(t, "log at git", text(t, call(t, cs, "log", map[string]any{"message": "m"})), "%s at %s", path, version)
			}
			require.NoError(t, cs.Close())
		}
	}
	b.mu.Lock()
	assert.Equal(t, []string{"git/log", "git/log"}, b.calls, "each generation's call reached the server")
	b.mu.Unlock()
}

func assertSchemaVerbatim(t *testing.T, tool *mcp.Tool, path string) {
	t.Helper()
	got, err := json.Marshal(tool.InputSchema)
	require.NoError(t, err)
	assert.JSONEq(t, schema2020, string(got), "%s: the 2020-12 schema verbatim", path)
}

// The endpoint's guard stands in front of both generations' handlers: a
// request of the newest generation is refused for want of a token, by a
// follower (naming the leader), over the body bound, or not JSON-RPC, as
// one of the older is; and a view's server down is named.
func TestTheGuardStandsInFrontOfBothGenerations(t *testing.T) {
	var leading atomic.Bool
	leading.Store(true)
	url, b := generationsSetup(t, Options{Token: "s3cret", MaxBodyBytes: 4096,
		Leader: func() (string, bool) { return "musterd-0", leading.Load() }})
	meta := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}`
	list := `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{` + meta + `}}`
	post := func(path, body, token string) (int, string) {
		t.Helper()
		req, err := http.NewRequest(http.MethodPost, url+path, strings.NewReader(body))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Protocol-Version", newestProtocol)
		req.Header.Set("Mcp-Method", "tools/list")
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		data, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return resp.StatusCode, string(data)
	}
	for _, path := range []string{PathMCP, PathDirect, PathServers + "git"} {
		code, body := post(path, list, "s3cret")
		assert.Equal(t, http.StatusOK, code, "%s: %s", path, body)
		assert.Contains(t, body, `"tools":[`, path)

		code, body = post(path, list, "")
		assert.Equal(t, http.StatusUnauthorized, code, "%s: %s", path, body)
		assert.Contains(t, body, "a valid bearer token is required", path)

		code, body = post(path, `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{`+meta+`,"pad":"`+strings.Repeat("x", 5000)+`"}}`, "s3cret")
		assert.Equal(t, http.StatusRequestEntityTooLarge, code, "%s: %s", path, body)
		assert.Contains(t, body, "request body exceeds the bound of 4096 bytes", path)

		code, body = post(path, `{"jsonrpc":"2.0","id":1,"method":`, "s3cret")
		assert.Equal(t, http.StatusBadRequest, code, "%s: %s", path, body)
		assert.Contains(t, body, `"code":-32700`, path)

		leading.Store(false)
		code, body = post(path, list, "s3cret")
		leading.Store(true)
		assert.Equal(t, http.StatusServiceUnavailable, code, "%s: %s", path, body)
		assert.Contains(t, body, "the leader is musterd-0", path)
	}

	// The view asked for once, its server down: a call of the newest
	// generation reaches the view (and waits for the server, as a
	// session's would); a view never asked for names the server's state.
	b.set(b.offer, &router.ServerDownError{Key: b.offer.Key, State: "Failed", LastError: "exit status 3"})
	code, body := post(PathServers+"git", list, "s3cret")
	assert.Equal(t, http.StatusOK, code, body)
	b.set(router.ServerOffer{Key: events.NewKey("MCPServer", "default", "other")}, &router.ServerDownError{Key: events.NewKey("MCPServer", "default", "other"), State: "Failed", LastError: "exit status 3"})
	code, body = post(PathServers+"other", list, "s3cret")
	assert.Equal(t, http.StatusServiceUnavailable, code, body)
	assert.Contains(t, body, "is not running (state Failed): exit status 3")
}

// A call of the older generation carries its client as a peer.Peer (for
// the servers' sessions on its behalf); one of the newest carries none: it
// has no session for a server's session to last with, so it is served on
// the server's shared session (and the go-sdk would refuse a server's
// request to it anyway).
func TestOnlyTheOlderGenerationsCallsCarryAPeer(t *testing.T) {
	url, b := generationsSetup(t, Options{})
	peers := make(chan bool, 2)
	b.mu.Lock()
	b.call = func(ctx context.Context, name string, args map[string]any, progress func(*mcp.ProgressNotificationParams)) (*mcp.CallToolResult, error) {
		_, ok := peer.From(ctx)
		peers <- ok
		return echo(ctx, name, args, progress)
	}
	b.mu.Unlock()
	for _, version := range []string{newestProtocol, latestLegacy} {
		c := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "0"}, nil)
		cs, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: url + PathDirect},
			&mcp.ClientSessionOptions{ProtocolVersion: version})
		require.NoError(t, err)
		call(t, cs, "git_log", map[string]any{"message": "m"})
		assert.Equal(t, version == latestLegacy, <-peers, "a peer on a call at %s", version)
		require.NoError(t, cs.Close())
	}
}

// initialize is the older generation's: without a version header it opens
// a session, whatever version it asks for; sent as the newest generation
// (its header and _meta say 2026-07-28) it is a method that generation
// does not have: 404 and method not found, as SEP-2575 has it.
func TestInitializeSentAsTheNewestGenerationIsNotFound(t *testing.T) {
	h := newHarness(t, nil)
	meta := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}`
	init := `{"jsonrpc":"2.0","id":7,"method":"initialize","params":{"protocolVersion":"2026-07-28","capabilities":{},"clientInfo":{"name":"t","version":"1"},` + meta + `}}`
	for _, path := range []string{PathMCP, PathDirect} {
		code, hdr, body := h.send(http.MethodPost, path, init, map[string]string{"Mcp-Protocol-Version": newestProtocol, "Mcp-Method": "initialize"})
		assert.Equal(t, http.StatusNotFound, code, "%s: %s", path, body)
		assert.Contains(t, sseData(t, body), `"code":-32601`, path)
		assert.Contains(t, sseData(t, body), `"id":7`, path)
		assert.Empty(t, hdr.Get(sessionHeader), path)

		code, hdr, body = h.send(http.MethodPost, path, `{"jsonrpc":"2.0","id":8,"method":"initialize","params":{"protocolVersion":"2026-07-28","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`, nil)
		assert.Equal(t, http.StatusOK, code, "%s: %s", path, body)
		assert.Contains(t, sseData(t, body), `"protocolVersion":"2025-11-25"`, path)
		assert.NotEmpty(t, hdr.Get(sessionHeader), "%s: an initialize without the header opens a session", path)
	}
}

// goneBackend's server says every resource read is not found.
type goneBackend struct{ *viewBackend }

func (goneBackend) ReadServerResource(_ context.Context, _ events.Key, uri string) (*mcp.ReadResourceResult, error) {
	return nil, mcp.ResourceNotFoundError(uri)
}

// A resource that is not found is invalid params (-32602) for a client of
// the newest generation, as 2026-07-28 has it: one no view lists (the
// go-sdk's answer), and one the server itself says is not found (its
// error passes through the view with its code).
func TestAResourceNotFoundIsInvalidParams(t *testing.T) {
	key := events.NewKey("MCPServer", "default", "git")
	b := goneBackend{&viewBackend{fakeBackend: &fakeBackend{call: echo}}}
	init := initResult("git-server", "")
	init.Capabilities.Resources = &mcp.ResourceCapabilities{}
	b.set(router.ServerOffer{Key: key, Init: init, Resources: []*mcp.Resource{{URI: "file:///gone.md", Name: "gone"}}}, nil)
	srv, err := New(Options{Backend: b, Logger: quiet()})
	require.NoError(t, err)
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(ts.Close)
	read := func(path, uri string) *jsonrpc.Error {
		t.Helper()
		c := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "0"}, nil)
		cs, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: ts.URL + path}, nil)
		require.NoError(t, err)
		defer cs.Close()
		require.Equal(t, newestProtocol, cs.InitializeResult().ProtocolVersion)
		_, err = cs.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: uri})
		var rpcErr *jsonrpc.Error
		require.ErrorAs(t, err, &rpcErr, "%s %s", path, uri)
		return rpcErr
	}
	for _, path := range []string{PathMCP, PathDirect, PathServers + "git"} {
		assert.Equal(t, int64(jsonrpc.CodeInvalidParams), read(path, "file:///nowhere.md").Code, path)
	}
	e := read(PathServers+"git", "file:///gone.md")
	assert.Equal(t, int64(jsonrpc.CodeInvalidParams), e.Code)
	assert.JSONEq(t, `{"uri":"file:///gone.md"}`, string(e.Data))
}
