package main

import (
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/musterd/musterd/internal/mcpfake"
	"github.com/musterd/musterd/pkg/apis/muster/v1alpha1"
)

// restartableRemote is a real remote MCP server the test kills and starts
// again at the same address.
type restartableRemote struct {
	name  string
	url   string
	start func(t *testing.T) *exec.Cmd
	cmd   *exec.Cmd
}

func (r *restartableRemote) kill(t *testing.T) {
	t.Helper()
	require.NoError(t, r.cmd.Process.Kill())
	_ = r.cmd.Wait()
}

// fakeRemote is mcp-fake -http, started again on the port it got first.
func fakeRemote(t *testing.T) *restartableRemote {
	t.Helper()
	r := &restartableRemote{name: "fake"}
	r.url, r.cmd = mcpfake.ServeHTTP(t, fakeServer(), "-tools", "far")
	u, err := url.Parse(r.url)
	require.NoError(t, err)
	r.start = func(t *testing.T) *exec.Cmd {
		_, cmd := mcpfake.ServeHTTP(t, fakeServer(), "-http", u.Host, "-tools", "far")
		return cmd
	}
	return r
}

// everythingRemote is npm's server-everything in streamableHttp mode, or
// nil if it is not installed (make npm-servers).
func everythingRemote(t *testing.T) *restartableRemote {
	t.Helper()
	bin, err := filepath.Abs("../../.cache/npm/node_modules/.bin/mcp-server-everything") // the repository's, from cmd/musterd
	require.NoError(t, err)
	if _, err := exec.LookPath("node"); err != nil {
		t.Log("node is not installed: no server-everything")
		return nil
	}
	if _, err := os.Stat(bin); err != nil {
		t.Logf("server-everything is not installed at %s (make npm-servers)", bin)
		return nil
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	port := ln.Addr().(*net.TCPAddr).Port
	require.NoError(t, ln.Close())
	r := &restartableRemote{name: "everything", url: fmt.Sprintf("http://127.0.0.1:%d/mcp", port)}
	r.start = func(t *testing.T) *exec.Cmd {
		cmd := exec.Command(bin, "streamableHttp")
		cmd.Env = append(os.Environ(), fmt.Sprintf("PORT=%d", port))
		require.NoError(t, cmd.Start())
		t.Cleanup(func() {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		})
		eventually(t, "server-everything listens on "+r.url, func() bool {
			c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port))
			if err == nil {
				_ = c.Close()
			}
			return err == nil
		})
		return cmd
	}
	r.cmd = r.start(t)
	return r
}

func remoteSpec(u string) []string {
	return []string{"type: streamable-http", "autoStart: true", "url: " + yamlValue(u), "timeout: 10"}
}

// A real remote killed is shown not Connected on the API at once: the
// health pings here come once an hour, so only its dropped connection can
// tell. Started again, it is Connected within its backoff, with lastError
// empty, the failures counted as failures and no restart. Measured, not
// asserted: how long each took.
func TestE2EARemoteThatDiesIsShownAtOnceAndConnectedWhenBack(t *testing.T) {
	remotes := []*restartableRemote{fakeRemote(t)}
	if r := everythingRemote(t); r != nil {
		remotes = append(remotes, r)
	}
	e := startFS(t, "-ping-interval", "1h")
	for _, r := range remotes {
		e.write(t, "mcpservers/"+r.name+".yaml", mcpServerYAML(r.name, remoteSpec(r.url)...))
	}
	for _, r := range remotes {
		e.waitServer(t, r.name, "is Connected", func(s serverObject) bool { return s.Status.State == v1alpha1.MCPServerStateConnected })
	}
	for _, r := range remotes {
		killed := time.Now()
		r.kill(t)
		down := e.waitServer(t, r.name, "is not Connected", func(s serverObject) bool { return s.Status.State != v1alpha1.MCPServerStateConnected })
		shown := time.Since(killed)
		assert.Equal(t, v1alpha1.MCPServerStateDisconnected, down.Status.State, r.name)
		assert.NotEmpty(t, down.Status.LastError, r.name)
		assert.Empty(t, down.Status.Tools, r.name)

		backAt := time.Now()
		r.cmd = r.start(t)
		back := e.waitServer(t, r.name, "is Connected again", func(s serverObject) bool {
			return s.Status.State == v1alpha1.MCPServerStateConnected && s.Reconcile.State == "Synced"
		})
		var delay time.Duration
		if down.Status.NextRetryAfter != nil {
			delay = down.Status.NextRetryAfter.Sub(backAt)
		}
		t.Logf("%s: not Connected on the API %v after the kill; Connected again %v after it was back (its backoff then had %v to go)",
			r.name, shown.Round(time.Millisecond), time.Since(backAt).Round(time.Millisecond), delay.Round(time.Millisecond))
		assert.Empty(t, back.Status.LastError, "%s: Connected, nothing wrong now", r.name)
		assert.NotEmpty(t, back.Status.LastFailure, "%s: the past failure is kept", r.name)
		assert.NotNil(t, back.Status.LastFailureTime, r.name)
		assert.GreaterOrEqual(t, back.Status.ConsecutiveFailures, 1, "%s: counted as failures", r.name)
		assert.Zero(t, back.Status.RestartCount, "%s: a reconnect is no restart", r.name)
		require.NotNil(t, back.Status.LastConnected, r.name)
		assert.True(t, back.Status.LastConnected.Time.After(backAt.Add(-time.Second)), "%s: lastConnected is fresh", r.name)
	}
}

// A stdio server that hangs after its start, and a remote that accepts
// connections and never answers, each go to Failed when a ping goes
// unanswered for the ping timeout; the server beside them is untouched.
func TestE2EHangingServersFailTheirPingAndTheirNeighbourIsUntouched(t *testing.T) {
	marker := newMarker()
	hangingRemote, _ := mcpfake.ServeHTTP(t, fakeServer(), "-tools", "far", "-hang-after", "1s")
	e := startFS(t, "-ping-interval", "300ms", "-ping-timeout", "500ms")
	e.write(t, "mcpservers/steady.yaml", mcpServerYAML("steady", stdioSpec("-tools", "steady,"+marker)...))
	e.write(t, "mcpservers/hangs.yaml", mcpServerYAML("hangs", stdioSpec("-tools", "hangs,"+marker, "-hang-after", "1s")...))
	e.write(t, "mcpservers/remote.yaml", mcpServerYAML("remote", remoteSpec(hangingRemote)...))
	e.waitServer(t, "steady", "is Running", running("x_steady_steady", "x_steady_"+marker))
	steady := theServerProc(t, "steady,"+marker)

	for _, name := range []string{"hangs", "remote"} {
		s := e.waitServer(t, name, "is Failed", func(s serverObject) bool { return s.Status.State == v1alpha1.MCPServerStateFailed })
		assert.Equal(t, "health ping failed: no answer within 500ms", s.Status.LastError, name)
		assert.Equal(t, s.Status.LastError, s.Status.LastFailure, name)
	}
	s, ok := e.server(t, "steady")
	require.True(t, ok)
	assert.True(t, running("x_steady_steady", "x_steady_"+marker)(s), "%+v", s)
	assert.Zero(t, s.Status.RestartCount)
	assert.True(t, steady.alive())
	assert.Equal(t, []proc{steady}, serverProcs("steady,"+marker), "the neighbour was not restarted")
}

// The same in Kubernetes mode: the custom resource's status follows a
// remote that dies and comes back, and a stdio server that hangs, with an
// Event on each transition. Measured, not asserted: how long each took.
func TestE2EKubeStatusFollowsARemoteThatDiesAndAServerThatHangs(t *testing.T) {
	k := startKube(t)
	d := k.musterd(t, "-ping-interval", "300ms", "-ping-timeout", "500ms")
	d.waitReady(t)
	r := fakeRemote(t)
	for _, s := range []*v1alpha1.MCPServer{
		{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "remote"},
			Spec: v1alpha1.MCPServerSpec{Type: v1alpha1.MCPServerTypeStreamableHTTP, AutoStart: true, URL: r.url, Timeout: 10}},
		{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "hangs"},
			Spec: v1alpha1.MCPServerSpec{Type: v1alpha1.MCPServerTypeStdio, AutoStart: true, Command: fakeServer(),
				Args: []string{"-tools", newMarker(), "-hang-after", "2s"}}},
	} {
		require.NoError(t, k.cp.Client.Create(t.Context(), s))
	}
	connected := func(s *v1alpha1.MCPServer) bool { return s.Status.State == v1alpha1.MCPServerStateConnected }
	k.waitStatus(t, "remote", "is Connected", connected)

	killed := time.Now()
	r.kill(t)
	down := k.waitStatus(t, "remote", "is not Connected", func(s *v1alpha1.MCPServer) bool { return !connected(s) })
	shown := time.Since(killed)
	assert.Equal(t, v1alpha1.MCPServerStateDisconnected, down.Status.State)
	ready := apimeta.FindStatusCondition(down.Status.Conditions, v1alpha1.ConditionReady)
	require.NotNil(t, ready)
	assert.Equal(t, metav1.ConditionFalse, ready.Status)

	backAt := time.Now()
	r.cmd = r.start(t)
	back := k.waitStatus(t, "remote", "is Connected again", connected)
	t.Logf("remote: not Connected on the CR %v after the kill; Connected again %v after it was back",
		shown.Round(time.Millisecond), time.Since(backAt).Round(time.Millisecond))
	assert.Empty(t, back.Status.LastError)
	assert.NotEmpty(t, back.Status.LastFailure)
	assert.GreaterOrEqual(t, back.Status.ConsecutiveFailures, 1)
	assert.Zero(t, back.Status.RestartCount)

	hung := k.waitStatus(t, "hangs", "is Failed", func(s *v1alpha1.MCPServer) bool { return s.Status.State == v1alpha1.MCPServerStateFailed })
	assert.Equal(t, "health ping failed: no answer within 500ms", hung.Status.LastError)

	eventually(t, "an Event on each transition", func() bool {
		remote, hangs := k.kubeEvents(t, "remote"), k.kubeEvents(t, "hangs")
		return slices.ContainsFunc(remote, func(e string) bool { return strings.HasPrefix(e, "Warning MCPServerHealthCheckFailed: ") }) &&
			slices.Contains(remote, "Normal MCPServerStarted: MCPServer remote service started successfully") &&
			slices.Contains(hangs, "Warning MCPServerFailed: MCPServer hangs operation failed: health ping failed: no answer within 500ms")
	})
}
