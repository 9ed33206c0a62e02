package supervisor_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/musterd/musterd/internal/mcpfake"
	"github.com/musterd/musterd/pkg/apis/muster/v1alpha1"
	"github.com/musterd/musterd/pkg/events"
	"github.com/musterd/musterd/pkg/supervisor"
)

const (
	connected    = v1alpha1.MCPServerStateConnected
	disconnected = v1alpha1.MCPServerStateDisconnected
)

// startProcess starts cmd, a server the test runs itself, and returns the
// first line of out (its stdout or stderr) that contains marker.
func startProcess(t *testing.T, cmd *exec.Cmd, out io.Reader, marker string) string {
	t.Helper()
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	found := make(chan string, 1)
	go func() {
		scanner := bufio.NewScanner(out)
		for scanner.Scan() {
			if strings.Contains(scanner.Text(), marker) {
				found <- scanner.Text()
				break
			}
		}
		_, _ = io.Copy(io.Discard, out) // a full pipe must not block the server
	}()
	select {
	case line := <-found:
		return line
	case <-time.After(deadline):
		t.Fatalf("%s never printed %q", cmd.Path, marker)
		return ""
	}
}

// startHTTPFake runs mcp-fake -http on a free loopback port and returns its
// streamable-http URL.
func startHTTPFake(t *testing.T, args ...string) (string, *exec.Cmd) {
	t.Helper()
	return mcpfake.ServeHTTP(t, fakeBin, args...)
}

func remote(typ v1alpha1.MCPServerType, url string) v1alpha1.MCPServerSpec {
	return v1alpha1.MCPServerSpec{Type: typ, URL: url, Timeout: 20}
}

func TestRemoteServersConnectAndAreDisconnectedWhenTheyGoAway(t *testing.T) {
	t.Parallel()
	// Pings an hour apart: only the dropped connections can tell.
	h := newHarness(t, supervisor.Options{PingInterval: time.Hour, PingTimeout: time.Second,
		RestartBackoff: supervisor.Backoff{Base: 50 * time.Millisecond}})
	url, server := startHTTPFake(t, "-tools", "far,away")
	streamable, sse := key("streamable"), key("sse")

	obs := h.ensure(t, streamable, remote(v1alpha1.MCPServerTypeStreamableHTTP, url))
	assert.Equal(t, connected, obs.State)
	assert.Equal(t, []string{"away", "far"}, obs.Tools)
	assert.Zero(t, obs.PID)
	obs = h.ensure(t, sse, remote(v1alpha1.MCPServerTypeSSE, strings.TrimSuffix(url, "/mcp")+"/sse"))
	assert.Equal(t, connected, obs.State)
	assert.Equal(t, []string{"away", "far"}, obs.Tools)

	require.NoError(t, server.Process.Kill())
	for _, k := range []events.Key{streamable, sse} {
		gone := h.rec.waitFor(t, k, "disconnected", func(o supervisor.Observed) bool { return o.State == disconnected })
		assert.NotEmpty(t, gone.LastError, k.Name)
		assert.Equal(t, 1, gone.ConsecutiveFailures, k.Name)
		assert.Empty(t, gone.Tools, k.Name)
	}

	gone, _ := h.sup.Get(streamable)
	time.Sleep(time.Until(gone.NextRetryAfter))
	obs = h.ensure(t, streamable, remote(v1alpha1.MCPServerTypeStreamableHTTP, url))
	assert.Equal(t, disconnected, obs.State, "nothing listens any more: a reconnect refused, still Disconnected")
	assert.Equal(t, 2, obs.ConsecutiveFailures)
	assert.Contains(t, obs.LastError, "connect to "+url)
}

func TestRemoteHeadersAreSentAndNeverLeak(t *testing.T) {
	t.Parallel()
	const apiKey, wrongKey = "header-secret-value", "wrong-secret-value"
	// A careless server: it answers a wrong key by echoing it in an error.
	handler := mcp.NewStreamableHTTPHandler(func(r *http.Request) *mcp.Server {
		got := r.Header.Get("X-Api-Key")
		server := mcp.NewServer(&mcp.Implementation{Name: "guarded", Version: "v1"}, nil)
		server.AddTool(&mcp.Tool{Name: "guarded", InputSchema: json.RawMessage(`{"type":"object"}`)},
			func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return &mcp.CallToolResult{}, nil
			})
		server.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
			return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
				if method == "tools/list" && got != apiKey {
					return nil, fmt.Errorf("X-Api-Key %s may not list tools", got)
				}
				return next(ctx, method, req)
			}
		})
		return server
	}, nil)
	var posts, withoutKey atomic.Int64
	httpServer := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Api-Key") == "" {
			withoutKey.Add(1)
			http.Error(w, "X-Api-Key missing", http.StatusUnauthorized)
			return
		}
		if r.Method == http.MethodPost {
			posts.Add(1)
		}
		handler.ServeHTTP(w, r)
	}))
	t.Cleanup(httpServer.Close) // after the supervisor's shutdown, which closes the sessions
	h := newHarness(t, supervisor.Options{PingInterval: 50 * time.Millisecond})

	spec := remote(v1alpha1.MCPServerTypeStreamableHTTP, httpServer.URL)
	spec.Headers = map[string]string{"X-Api-Key": apiKey}
	guarded := key("guarded")
	obs := h.ensure(t, guarded, spec)
	assert.Equal(t, connected, obs.State, "the header reached the server")
	assert.Equal(t, []string{"guarded"}, obs.Tools)

	spec.Headers = map[string]string{"x-api-key": wrongKey}
	refused := key("refused")
	bad := h.ensure(t, refused, spec)
	assert.Equal(t, v1alpha1.MCPServerStateFailed, bad.State)
	_, err := h.sup.Ensure(t.Context(), refused, spec)
	require.Error(t, err, "backing off")
	assert.Contains(t, bad.LastError, "X-Api-Key [redacted] may not list tools", "the server echoed it; the supervisor scrubbed it")

	// Pings carry the header too.
	pinged := posts.Load() + 3
	require.Eventually(t, func() bool { return posts.Load() >= pinged }, deadline, 5*time.Millisecond, "no pings")
	still, _ := h.sup.Get(guarded)
	assert.Equal(t, connected, still.State)
	assert.Zero(t, withoutKey.Load(), "every request carried the header")
	for what, text := range map[string]string{
		"error": err.Error(), "observed": fmt.Sprintf("%+v %+v", obs, bad), "logs": h.logs.String(),
		"changes": fmt.Sprintf("%+v %+v", h.rec.of(guarded), h.rec.of(refused)),
	} {
		assert.NotContains(t, text, apiKey, what)
		assert.NotContains(t, text, wrongKey, what)
	}
}

// serverEverything returns the path of @modelcontextprotocol/server-everything
// as `make npm-servers` installs it, or skips the test.
func serverEverything(t *testing.T) string {
	t.Helper()
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("node is not installed: skipping the test against the npm server @modelcontextprotocol/server-everything")
	}
	bin, err := filepath.Abs("../../.cache/npm/node_modules/.bin/mcp-server-everything")
	require.NoError(t, err)
	if _, err := os.Stat(bin); err != nil {
		t.Skipf("@modelcontextprotocol/server-everything is not installed at %s: run `make npm-servers`", bin)
	}
	return bin
}

func TestTheNpmServerEverythingRunsOverStdio(t *testing.T) {
	t.Parallel()
	bin := serverEverything(t)
	h := newHarness(t, supervisor.Options{})
	k := key("everything")
	obs := h.ensure(t, k, v1alpha1.MCPServerSpec{Type: v1alpha1.MCPServerTypeStdio, Command: bin, Args: []string{"stdio"}, Timeout: 30})
	assert.Equal(t, running, obs.State)
	assert.Subset(t, obs.Tools, []string{"echo", "get-sum"})
	assert.True(t, slices.IsSorted(obs.Tools))

	require.NoError(t, h.sup.Stop(t.Context(), k))
	assert.False(t, processExists(obs.PID))
	assert.False(t, groupExists(obs.PID))
}

func TestTheNpmServerEverythingConnectsOverStreamableHTTP(t *testing.T) {
	t.Parallel()
	bin := serverEverything(t)
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	port := listener.Addr().(*net.TCPAddr).Port
	require.NoError(t, listener.Close())

	cmd := exec.Command(bin, "streamableHttp")
	cmd.Env = append(os.Environ(), fmt.Sprintf("PORT=%d", port))
	stderr, err := cmd.StderrPipe()
	require.NoError(t, err)
	startProcess(t, cmd, stderr, "listening on port")

	h := newHarness(t, supervisor.Options{})
	obs := h.ensure(t, key("everything-http"), remote(v1alpha1.MCPServerTypeStreamableHTTP, fmt.Sprintf("http://127.0.0.1:%d/mcp", port)))
	assert.Equal(t, connected, obs.State)
	assert.Subset(t, obs.Tools, []string{"echo", "get-sum"})
}
