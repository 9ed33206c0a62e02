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

// The protocol versions, as the go-sdk v1.8 names them.
const (
	newestProtocol = "2026-07-28" // SEP-2575: server/discover, subscriptions/listen
	latestLegacy   = "2025-11-25"
)

// legacyVersions are the versions the endpoint speaks, newest first.
var legacyVersions = []string{latestLegacy, "2025-06-18", "2025-03-26", musterProtocol}

// The endpoint speaks every protocol version up to 2025-11-25, on each of
// its transports, and a client of the newest (a go-sdk v1.8 client asks for
// it unless told otherwise) falls back to 2025-11-25: the go-sdk serves
// 2026-07-28 only on a stateless streamable handler, which musterd's are
// not (doc.go says why). This test is the tripwire for a go-sdk upgrade
// that changes it: the newest protocol brings subscriptions/listen, which
// the views handle (listen_test.go), but not yet the rest musterd needs.
func TestTheEndpointSpeaksUpTo20251125AndClientsOfTheNewestFallBack(t *testing.T) {
	h := newHarness(t, nil)
	for _, path := range []string{PathMCP, PathDirect, PathSSE} {
		for _, asked := range append([]string{"", newestProtocol}, legacyVersions...) {
			want := asked
			if asked == "" || asked == newestProtocol {
				want = latestLegacy
			}
			assert.Equal(t, want, h.connect(path, asked, nil).InitializeResult().ProtocolVersion, "%s asking for %q", path, asked)
		}
	}

	// What a client of the newest protocol sees first: server/discover
	// lists the versions spoken, and a request in the newest protocol is
	// refused naming them, as SEP-2575 has it.
	newest := map[string]string{"Mcp-Protocol-Version": newestProtocol}
	meta := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}`
	for _, path := range []string{PathMCP, PathDirect} {
		code, _, body := h.send(http.MethodPost, path, `{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{`+meta+`}}`,
			map[string]string{"Mcp-Protocol-Version": newestProtocol, "Mcp-Method": "server/discover"})
		require.Equal(t, http.StatusOK, code, body)
		var discovered struct {
			Result struct {
				SupportedVersions []string `json:"supportedVersions"`
			} `json:"result"`
		}
		require.NoError(t, json.Unmarshal([]byte(sseData(t, body)), &discovered), body)
		assert.Equal(t, legacyVersions, discovered.Result.SupportedVersions, path)

		code, a := h.rpcError(path, `{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{`+meta+`}}`, newest)
		assert.Equal(t, http.StatusBadRequest, code)
		assert.Equal(t, int64(mcp.CodeUnsupportedProtocolVersion), a.Error.Code, a.Error.Message)
		assert.Contains(t, a.Error.Message, `protocol version "2026-07-28" is not supported`)
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
