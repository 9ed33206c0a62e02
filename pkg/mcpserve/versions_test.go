package mcpserve

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// latestLegacy is the newest version of the older generation.
const latestLegacy = "2025-11-25"

// legacyVersions are the older generation's versions the endpoint speaks,
// newest first.
var legacyVersions = []string{latestLegacy, "2025-06-18", "2025-03-26", musterProtocol}

// The endpoint speaks both generations on its streamable views: a client
// of the newest (a go-sdk v1.8 client asks for it unless told otherwise)
// discovers 2026-07-28 and uses it, one that initializes gets the version
// it asks for, up to 2025-11-25 (asking for 2026-07-28 in initialize falls
// back to 2025-11-25: initialize is the older generation's). SSE is the
// older generation's transport alone. This test is the tripwire for a
// go-sdk upgrade that changes either.
func TestTheEndpointSpeaksBothGenerations(t *testing.T) {
	h := newHarness(t, nil)
	for _, path := range []string{PathMCP, PathDirect, PathSSE} {
		for _, asked := range append([]string{"", newestProtocol}, legacyVersions...) {
			want := asked
			switch {
			case path == PathSSE && (asked == "" || asked == newestProtocol):
				want = latestLegacy
			case asked == "":
				want = newestProtocol
			}
			assert.Equal(t, want, h.connect(path, asked, nil).InitializeResult().ProtocolVersion, "%s asking for %q", path, asked)
		}
	}

	// What a client of the newest protocol sees first: server/discover
	// lists every version spoken, and a request in the newest protocol is
	// answered, with no session.
	newest := map[string]string{"Mcp-Protocol-Version": newestProtocol}
	meta := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}`
	for _, path := range []string{PathMCP, PathDirect} {
		code, hdr, body := h.send(http.MethodPost, path, `{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{`+meta+`}}`,
			map[string]string{"Mcp-Protocol-Version": newestProtocol, "Mcp-Method": "server/discover"})
		require.Equal(t, http.StatusOK, code, body)
		assert.Empty(t, hdr.Get(sessionHeader), "no session in the newest protocol")
		var discovered struct {
			Result struct {
				SupportedVersions []string `json:"supportedVersions"`
			} `json:"result"`
		}
		require.NoError(t, json.Unmarshal([]byte(sseData(t, body)), &discovered), body)
		assert.Equal(t, append([]string{newestProtocol}, legacyVersions...), discovered.Result.SupportedVersions, path)

		code, hdr, body = h.send(http.MethodPost, path, `{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{`+meta+`}}`,
			map[string]string{"Mcp-Protocol-Version": newestProtocol, "Mcp-Method": "tools/list"})
		require.Equal(t, http.StatusOK, code, body)
		assert.Empty(t, hdr.Get(sessionHeader))
		assert.Contains(t, sseData(t, body), `"tools":[`, path)
		// A list's caching hint: stale at once, so that no client caches
		// past a reconcile that changes it (doc.go).
		assert.Contains(t, sseData(t, body), `"ttlMs":0`, path)

		// The routing headers are checked against the body.
		code, a := h.rpcError(path, `{"jsonrpc":"2.0","id":3,"method":"tools/list","params":{`+meta+`}}`, newest)
		assert.Equal(t, http.StatusBadRequest, code)
		assert.Equal(t, int64(mcp.CodeHeaderMismatch), a.Error.Code, a.Error.Message)
		assert.Contains(t, a.Error.Message, "Mcp-Method")
		code, a = h.rpcError(path, `{"jsonrpc":"2.0","id":4,"method":"tools/list","params":{`+meta+`}}`,
			map[string]string{"Mcp-Protocol-Version": newestProtocol, "Mcp-Method": "prompts/list"})
		assert.Equal(t, http.StatusBadRequest, code)
		assert.Equal(t, int64(mcp.CodeHeaderMismatch), a.Error.Code, a.Error.Message)

		// The version in _meta and no header: the header is required.
		code, a = h.rpcError(path, `{"jsonrpc":"2.0","id":5,"method":"tools/list","params":{`+meta+`}}`, nil)
		assert.Equal(t, http.StatusBadRequest, code)
		assert.Equal(t, int64(mcp.CodeHeaderMismatch), a.Error.Code, a.Error.Message)
		assert.Contains(t, a.Error.Message, "Mcp-Protocol-Version header is required")

		// The older generation's methods are not the newest's.
		code, _, body = h.send(http.MethodPost, path, `{"jsonrpc":"2.0","id":6,"method":"logging/setLevel","params":{"level":"debug",`+meta+`}}`,
			map[string]string{"Mcp-Protocol-Version": newestProtocol, "Mcp-Method": "logging/setLevel"})
		assert.Contains(t, sseData(t, body), `"code":-32601`, "%s: %d %s", path, code, body)
	}
}

// sseData returns the data of an answer that is one SSE event, or the
// answer itself when it is plain JSON.
func sseData(t *testing.T, body string) string {
	t.Helper()
	for line := range strings.SplitSeq(body, "\n") {
		if data, ok := strings.CutPrefix(line, "data: "); ok {
			return data
		}
	}
	return body
}

// What a client of the newest protocol needs works through the endpoint,
// on each transport: it falls back (above), subscribes to a resource,
// hears of its updates and of list changes, and musterd subscribes at the
// server once, and unsubscribes when the last session goes.
func TestClientsOfTheNewestProtocolGetUpdatesAndListChangedThroughTheEndpoint(t *testing.T) {
	const uri = "file:///notes.md"
	h, sb := newSubscribingHarness(t, uri)

	type heard struct{ updated, tools, resources chan string }
	newest := func(path string) (*mcp.ClientSession, heard) {
		t.Helper()
		got := heard{make(chan string, 4), make(chan string, 4), make(chan string, 4)}
		opts := &mcp.ClientOptions{
			ResourceUpdatedHandler: func(_ context.Context, r *mcp.ResourceUpdatedNotificationRequest) { got.updated <- r.Params.URI },
			ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { got.tools <- path },
			ResourceListChangedHandler: func(context.Context, *mcp.ResourceListChangedRequest) {
				got.resources <- path
			},
		}
		return h.connect(path, "", opts), got
	}
	direct, onDirect := newest(PathDirect)
	meta, onMeta := newest(PathMCP)
	sse, onSSE := newest(PathSSE)
	sessions := []*mcp.ClientSession{direct, meta, sse}
	for _, cs := range sessions {
		require.NoError(t, cs.Subscribe(context.Background(), &mcp.SubscribeParams{URI: uri}))
	}
	sb.mu.Lock()
	assert.Equal(t, []string{uri}, sb.subscribed, "subscribed at the server once")
	sb.mu.Unlock()

	sb.update(uri)
	for _, got := range []heard{onDirect, onMeta, onSSE} {
		assert.Equal(t, uri, waitFor(t, got.updated, "the update"))
	}

	// A server's tool and resource appear: /mcp/direct lists the tool,
	// and every view the resource.
	h.backend.setTools(echoTool("x_fake_echo"))
	h.backend.mu.Lock()
	h.backend.resources = append(h.backend.resources, &mcp.Resource{URI: "file:///todo.md", Name: "todo"})
	h.backend.mu.Unlock()
	require.True(t, h.srv.Refresh())
	assert.Equal(t, PathDirect, waitFor(t, onDirect.tools, "tools/list_changed on /mcp/direct"))
	assert.Equal(t, PathDirect, waitFor(t, onDirect.resources, "resources/list_changed on /mcp/direct"))
	assert.Equal(t, PathMCP, waitFor(t, onMeta.resources, "resources/list_changed on /mcp"))
	assert.Equal(t, PathSSE, waitFor(t, onSSE.resources, "resources/list_changed on /sse"))
	assert.Contains(t, listNames(t, direct), "x_fake_echo")

	// Two unsubscribe, the last ends its session: then, and only then,
	// musterd unsubscribes at the server.
	require.NoError(t, direct.Unsubscribe(context.Background(), &mcp.UnsubscribeParams{URI: uri}))
	require.NoError(t, meta.Unsubscribe(context.Background(), &mcp.UnsubscribeParams{URI: uri}))
	assert.Empty(t, sb.unsubscribed, "a session still wants it")
	require.NoError(t, sse.Close())
	assert.Equal(t, uri, waitFor(t, sb.unsubscribed, "the unsubscribe once the last session went"))
}
