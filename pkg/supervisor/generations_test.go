package supervisor_test

import (
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/musterd/musterd/internal/conformancetest"
	"github.com/musterd/musterd/pkg/apis/muster/v1alpha1"
	"github.com/musterd/musterd/pkg/events"
	"github.com/musterd/musterd/pkg/supervisor"
)

// musterd speaks to each server in the newest generation it offers: a
// go-sdk server over stdio agrees to 2026-07-28; one that offers 2025-11-25
// only, a stateful streamable-http server (the go-sdk serves 2026-07-28
// statelessly only) and an SSE server fall back to 2025-11-25. Observed
// says which; the server itself says the same.
func TestEachServerSpeaksTheNewestGenerationItOffers(t *testing.T) {
	t.Parallel()
	h := newHarness(t, supervisor.Options{})
	url, _ := startHTTPFake(t, "-tools", "protocol")
	for name, c := range map[string]struct {
		spec v1alpha1.MCPServerSpec
		want string
	}{
		"stdio":       {fake("-tools", "protocol"), "2026-07-28"},
		"stdio-older": {fake("-tools", "protocol", "-protocols", "2025-11-25,2025-06-18"), "2025-11-25"},
		"http":        {remote(v1alpha1.MCPServerTypeStreamableHTTP, url), "2025-11-25"},
		"sse":         {remote(v1alpha1.MCPServerTypeSSE, strings.TrimSuffix(url, "/mcp")+"/sse"), "2025-11-25"},
	} {
		obs := h.ensure(t, key(name), c.spec)
		assert.Equal(t, c.want, obs.ProtocolVersion(), name)
		res, err := h.sup.CallTool(callCtx(t), key(name), &mcp.CallToolParams{Name: "protocol"}, nil)
		require.NoError(t, err, name)
		require.Len(t, res.Content, 1, name)
		assert.Equal(t, c.want, res.Content[0].(*mcp.TextContent).Text, name+": as the server has it")
	}
}

// The go-sdk's conformance server, stateless over streamable HTTP, serves
// 2026-07-28 only over HTTP: musterd speaks it, and its calls, health
// checks (there is no ping) and lists work.
func TestAStatelessServerIsSpokenToIn20260728(t *testing.T) {
	t.Parallel()
	bin := conformancetest.BuildEverythingServer(t)
	url := conformancetest.ServeHTTPStateless(t, bin)
	h := newHarness(t, supervisor.Options{PingInterval: 50 * time.Millisecond})
	k := key("stateless")
	obs := h.ensure(t, k, remote(v1alpha1.MCPServerTypeStreamableHTTP, url))
	assert.Equal(t, "2026-07-28", obs.ProtocolVersion())
	assert.Contains(t, obs.Tools, "test_simple_text")
	res, err := h.sup.CallTool(callCtx(t), k, &mcp.CallToolParams{Name: "test_simple_text"}, nil)
	require.NoError(t, err)
	assert.False(t, res.IsError)
	before := obs.LastConnected
	require.Eventually(t, func() bool {
		got, _ := h.sup.Get(k)
		return got.LastConnected.After(before) && got.State == v1alpha1.MCPServerStateConnected
	}, deadline, 10*time.Millisecond, "its health checks pass")
}

// On a 2026-07-28 session a resource subscription is a listen stream:
// Subscribe returns once the server acknowledged it, and its updates come
// as before. (The go-sdk's conformance server over stdio offers
// subscriptions and updates test://watched-resource every 3s.)
func TestASubscriptionOnA20260728SessionIsAcknowledgedAndUpdates(t *testing.T) {
	t.Parallel()
	bin := conformancetest.BuildEverythingServer(t)
	h := newHarness(t, supervisor.Options{})
	k := key("everything")
	obs := h.ensure(t, k, v1alpha1.MCPServerSpec{Type: v1alpha1.MCPServerTypeStdio, Command: bin, Timeout: 20})
	require.Equal(t, "2026-07-28", obs.ProtocolVersion())
	updates := make(chan string, 16)
	defer h.sup.WatchResourceUpdates(func(_ events.Key, uri string) {
		select {
		case updates <- uri:
		default:
		}
	})()
	require.NoError(t, h.sup.Subscribe(callCtx(t), k, "test://watched-resource"))
	select {
	case uri := <-updates:
		assert.Equal(t, "test://watched-resource", uri)
	case <-time.After(deadline):
		t.Fatal("no update of the subscribed resource")
	}
	require.NoError(t, h.sup.Unsubscribe(callCtx(t), k, "test://watched-resource"))
}
