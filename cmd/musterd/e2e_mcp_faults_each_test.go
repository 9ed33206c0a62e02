package main

// Faults of the MCP endpoint's calls, each a test of its own with exact
// outcomes, through the real musterd binary to a real server (bin/mcp-fake
// -slow-tool), with the go-sdk client on /mcp/direct: a server killed
// mid-call (the error says it died), a spec-change restart under 20 calls
// in flight (every call drained on the old server, by its pid), a call to
// a server that is restarting (made while it is, seen through /proc). A
// client cancelling or ending its session mid-call is
// TestE2EMCPClientCancellingOrEndingItsSessionCancelsTheCallAtTheServer's
// (e2e_mcp_faults_test.go). No call may hang: each runs under
// callDeadline, and reaching it fails the test.

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/musterd/musterd/internal/proctest"
)

// progressSeen collects, per progress token, that a call's server has
// started working on it: its first progress notification.
type progressSeen struct {
	mu     sync.Mutex
	tokens map[string]chan struct{}
}

func newProgressSeen() *progressSeen { return &progressSeen{tokens: map[string]chan struct{}{}} }

func (p *progressSeen) ch(token string) chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	c, ok := p.tokens[token]
	if !ok {
		c = make(chan struct{})
		p.tokens[token] = c
	}
	return c
}

func (p *progressSeen) handler(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
	token, _ := req.Params.ProgressToken.(string)
	c := p.ch(token)
	p.mu.Lock()
	defer p.mu.Unlock()
	select {
	case <-c:
	default:
		close(c)
	}
}

// wait waits until the call with token reports progress.
func (p *progressSeen) wait(t *testing.T, token string) {
	t.Helper()
	select {
	case <-p.ch(token):
	case <-time.After(e2eDeadline):
		t.Fatalf("no progress for call %s: its server never started working on it", token)
	}
}

// callOutcome is how one call ended: its result's first text, whether it
// was a tool error, or the error of the call itself; and how long it took.
type callOutcome struct {
	text    string
	isError bool
	err     error
	took    time.Duration
}

// failure is the outcome's error text, whichever way it failed, or "".
func (o callOutcome) failure() string {
	switch {
	case o.err != nil:
		return o.err.Error()
	case o.isError:
		return o.text
	}
	return ""
}

// timedCall calls tool with a progress token under ctx (bounded by
// callDeadline) and returns how it ended.
func timedCall(ctx context.Context, cs *mcp.ClientSession, tool, token string, args map[string]any) callOutcome {
	ctx, cancel := context.WithTimeout(ctx, callDeadline)
	defer cancel()
	params := &mcp.CallToolParams{Name: tool, Arguments: args}
	if token != "" {
		params.SetProgressToken(token)
	}
	start := time.Now()
	res, err := cs.CallTool(ctx, params)
	o := callOutcome{err: err, took: time.Since(start)}
	if err == nil && len(res.Content) > 0 {
		if tc, ok := res.Content[0].(*mcp.TextContent); ok {
			o.text = tc.Text
		}
		o.isError = res.IsError
	}
	return o
}

// requireNoHang fails the test for a call that ran into callDeadline.
func requireNoHang(t *testing.T, what string, o callOutcome) {
	t.Helper()
	require.False(t, o.err != nil && strings.Contains(o.err.Error(), context.DeadlineExceeded.Error()),
		"%s hung: no answer within %s (%v)", what, callDeadline, o.err)
}

var donePid = regexp.MustCompile(`done after \d+ steps, pid (\d+)`)

// pidOf is the pid a slow tool's result names, or 0.
func pidOf(text string) int {
	m := donePid.FindStringSubmatch(text)
	if m == nil {
		return 0
	}
	pid, _ := strconv.Atoi(m[1])
	return pid
}

// slowToolServer declares name, an mcp-fake with echo, a marker tool and
// the slow tool "work", waits until a /mcp/direct session (its progress
// told to seen, if set) is served x_<name>_work, and returns the marker,
// the server's process and the session.
func slowToolServer(t *testing.T, e *fsEnv, name string, seen *progressSeen) (string, proc, *mcp.ClientSession) {
	t.Helper()
	marker := newMarker()
	e.write(t, "mcpservers/"+name+".yaml", mcpServerYAML(name, stdioSpec("-tools", "echo,"+marker, "-slow-tool", "work")...))
	e.waitServer(t, name, "running", serving(name, "echo", marker, "work", "work_cancelled"))
	server := theServerProc(t, marker)
	opts := &mcp.ClientOptions{}
	if seen != nil {
		opts.ProgressNotificationHandler = seen.handler
	}
	cs := e.mcpClient(t, "/mcp/direct", "2025-06-18", opts)
	tool := "x_" + name + "_work"
	eventually(t, tool+" is served", func() bool { return slices.Contains(toolNames(t, cs), tool) })
	return marker, server, cs
}

func TestE2EMCPServerKilledMidCallFailsTheCallSayingItDied(t *testing.T) {
	e := startFS(t)
	seen := newProgressSeen()
	marker, victim, cs := slowToolServer(t, e, "killme", seen)

	// A call that would work for 60 s, if its server lived.
	outcome := make(chan callOutcome, 1)
	go func() {
		outcome <- timedCall(context.Background(), cs, "x_killme_work", "killed", map[string]any{"steps": 600, "interval": "100ms"})
	}()
	seen.wait(t, "killed")
	killed := time.Now()
	require.NoError(t, proctest.Kill(victim.pid))

	o := <-outcome
	requireNoHang(t, "the call to the killed server", o)
	t.Logf("server SIGKILLed mid-call: the call failed %s later: %s", time.Since(killed).Round(time.Millisecond), o.failure())
	require.NoError(t, o.err, "a server's death is a tool error, not a broken session")
	require.True(t, o.isError, "the call must fail: %s", o.text)
	assert.Contains(t, o.text, "mcp server MCPServer/default/killme died while the call was pending")

	// The session is fine, and the restarted server serves it again.
	e.waitServer(t, "killme", "restarted", func(s serverObject) bool { return s.Status.State == "Running" })
	theServerProc(t, marker, victim)
	eventually(t, "a call reaches the restarted server", func() bool {
		o := timedCall(context.Background(), cs, "x_killme_work", "", map[string]any{"steps": 1, "interval": "1ms"})
		return o.err == nil && !o.isError && pidOf(o.text) != 0 && pidOf(o.text) != victim.pid
	})
}

func TestE2EMCPSpecChangeRestartUnderTwentyCallsInFlight(t *testing.T) {
	e := startFS(t)
	seen := newProgressSeen()
	marker, old, cs := slowToolServer(t, e, "busy", seen)

	// 20 calls of 2 s each, all running on the old server when its file
	// changes.
	const calls = 20
	outcomes := make([]callOutcome, calls)
	var wg sync.WaitGroup
	for i := range calls {
		wg.Go(func() {
			outcomes[i] = timedCall(context.Background(), cs, "x_busy_work", fmt.Sprintf("call-%d", i), map[string]any{"steps": 20, "interval": "100ms"})
		})
	}
	for i := range calls {
		seen.wait(t, fmt.Sprintf("call-%d", i))
	}
	e.write(t, "mcpservers/busy.yaml", mcpServerYAML("busy", stdioSpec("-tools", "echo,extra,"+marker, "-slow-tool", "work")...))
	wg.Wait()

	// Each call finished on the old server, or failed naming the server
	// and why; none hung.
	finished := 0
	for i, o := range outcomes {
		what := fmt.Sprintf("call %d", i)
		requireNoHang(t, what, o)
		require.NoError(t, o.err, "%s: a restart is a tool error at worst, not a broken session", what)
		if o.isError {
			assert.Contains(t, o.text, "mcp server default/busy", "%s fails naming its server", what)
			continue
		}
		assert.Equal(t, old.pid, pidOf(o.text), "%s ran on the old server: %s", what, o.text)
		finished++
	}
	t.Logf("spec-change restart under %d calls in flight: %d finished on the old server, %d failed clearly", calls, finished, calls-finished)
	assert.Equal(t, calls, finished, "the restart drains: 2 s calls are well inside the 10 s drain")

	// Then the new server, with the new spec's tools.
	e.waitServer(t, "busy", "restarted with extra", serving("busy", "echo", "extra", marker, "work", "work_cancelled"))
	assert.False(t, old.alive(), "the old server is stopped after its drain")
	eventually(t, "x_busy_extra is served", func() bool { return slices.Contains(toolNames(t, cs), "x_busy_extra") })
}

func TestE2EMCPCallToARestartingServerWaitsForIt(t *testing.T) {
	e := startFS(t)
	marker, old, cs := slowToolServer(t, e, "lazy", nil)

	// The new spec starts slowly: for 3 s the server is Starting.
	e.write(t, "mcpservers/lazy.yaml", mcpServerYAML("lazy", stdioSpec("-tools", "echo,"+marker, "-slow-tool", "work", "-slow-start", "3s")...))
	// The old process gone and the new one sleeping: the server is
	// restarting.
	eventually(t, "the old server is stopped", func() bool { return !old.alive() })
	theServerProc(t, marker, old)
	o := timedCall(context.Background(), cs, "x_lazy_work", "", map[string]any{"steps": 1, "interval": "1ms"})
	requireNoHang(t, "the call to the restarting server", o)
	t.Logf("call to a restarting server: answered after %s: %s", o.took.Round(time.Millisecond), o.text+fmt.Sprint(o.err))
	require.NoError(t, o.err)
	require.False(t, o.isError, "the call waits for the restart, then runs: %s", o.text)
	newPid := pidOf(o.text)
	assert.NotZero(t, newPid, o.text)
	assert.NotEqual(t, old.pid, newPid, "it ran on the new server")

	// A restart that cannot succeed: the new spec exits at once, so its
	// tools go with it, and a call fails at once naming the tool.
	e.write(t, "mcpservers/lazy.yaml", mcpServerYAML("lazy", stdioSpec("-tools", "echo,"+marker, "-slow-tool", "work", "-exit-at-once")...))
	e.waitServer(t, "lazy", "failed", func(s serverObject) bool { return s.Status.State == "Failed" })
	o = timedCall(context.Background(), cs, "x_lazy_work", "", map[string]any{"steps": 1, "interval": "1ms"})
	requireNoHang(t, "the call to the failed server", o)
	t.Logf("call to a server whose restart failed: %s", o.failure())
	require.NotEmpty(t, o.failure(), "a call to a failed server fails")
	assert.Contains(t, o.failure(), "x_lazy_work", "it names the tool")
}

// serving holds for server Running with exactly tools, by their exposed
// names, Synced.
func serving(server string, tools ...string) func(serverObject) bool {
	exposed := make([]string, len(tools))
	for i, tool := range tools {
		exposed[i] = "x_" + server + "_" + tool
	}
	return running(exposed...)
}
