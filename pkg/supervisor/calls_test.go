package supervisor_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/musterd/musterd/internal/npmtest"
	"github.com/musterd/musterd/internal/proctest"
	"github.com/musterd/musterd/pkg/apis/muster/v1alpha1"
	"github.com/musterd/musterd/pkg/supervisor"
)

// slowArgs are the arguments of mcp-fake's -slow-tool.
func slowArgs(steps int, interval time.Duration) map[string]any {
	return map[string]any{"steps": steps, "interval": interval.String()}
}

func text(t *testing.T, res *mcp.CallToolResult) string {
	t.Helper()
	require.NotNil(t, res)
	require.NotEmpty(t, res.Content)
	tc, ok := res.Content[0].(*mcp.TextContent)
	require.True(t, ok, "content %T", res.Content[0])
	return tc.Text
}

// callCtx bounds a call in a test: no call may hang the test.
func callCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), deadline)
	t.Cleanup(cancel)
	return ctx
}

func TestACallReachesTheLiveSessionWithItsResultUnchanged(t *testing.T) {
	t.Parallel()
	h := newHarness(t, supervisor.Options{})
	k := key("slow")
	obs := h.ensure(t, k, fake("-tools", "echo", "-slow-tool", "slow"))
	require.Len(t, obs.ToolDefs, 3)
	assert.Equal(t, []string{"echo", "slow", "slow_cancelled"}, obs.Tools)
	assert.Equal(t, "slow", obs.ToolDefs[1].Name)
	assert.Contains(t, obs.ToolDefs[1].Description, "reporting progress")
	assert.False(t, obs.ListedAt.IsZero())

	res, err := h.sup.CallTool(callCtx(t), k, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"a": 1}}, nil)
	require.NoError(t, err)
	assert.Equal(t, `echo {"a":1}`, text(t, res))

	res, err = h.sup.CallTool(callCtx(t), k, &mcp.CallToolParams{Name: "slow", Arguments: slowArgs(2, time.Millisecond)}, nil)
	require.NoError(t, err)
	assert.Equal(t, map[string]any{"steps": float64(2), "pid": float64(obs.PID)}, res.StructuredContent)
	assert.False(t, res.IsError)

	res, err = h.sup.CallTool(callCtx(t), k, &mcp.CallToolParams{Name: "nope"}, nil)
	if err == nil {
		assert.True(t, res.IsError, "an unknown tool is the server's error to give")
	} else {
		assert.Contains(t, err.Error(), "nope")
	}
	assert.Zero(t, h.sup.InFlight(k), "every call was released")
}

// TestProgressReachesTheCallerUnderItsOwnToken: the server's progress
// notifications for a call reach its caller, in order, with the caller's
// token. (The SDK handles notifications apart from responses, so one sent
// just before a result may be handled after it, when the call is over and
// nobody takes it: the test watches a long call, and ends it itself.)
func TestProgressReachesTheCallerUnderItsOwnToken(t *testing.T) {
	t.Parallel()
	h := newHarness(t, supervisor.Options{})
	k := key("progress")
	h.ensure(t, k, fake("-slow-tool", "slow"))

	ctx, cancel := context.WithCancel(callCtx(t))
	defer cancel()
	var (
		mu  sync.Mutex
		got []*mcp.ProgressNotificationParams
	)
	params := &mcp.CallToolParams{Name: "slow", Arguments: slowArgs(100000, 5*time.Millisecond)}
	params.SetProgressToken("client-token-7")
	_, err := h.sup.CallTool(ctx, k, params, func(p *mcp.ProgressNotificationParams) {
		mu.Lock()
		defer mu.Unlock()
		got = append(got, p)
		if len(got) == 3 {
			cancel()
		}
	})
	require.ErrorIs(t, err, context.Canceled)
	assert.Equal(t, "client-token-7", params.GetProgressToken(), "the caller's params are not changed")

	mu.Lock()
	defer mu.Unlock()
	require.GreaterOrEqual(t, len(got), 3)
	for i, p := range got {
		assert.Equal(t, "client-token-7", p.ProgressToken, "the caller's token, not musterd's")
		assert.Equal(t, float64(i+1), p.Progress)
		assert.Equal(t, float64(100000), p.Total)
		assert.Equal(t, fmt.Sprintf("step %d of 100000", i+1), p.Message)
	}
}

func TestACancelledCallIsCancelledOnTheServer(t *testing.T) {
	t.Parallel()
	h := newHarness(t, supervisor.Options{})
	k := key("cancel")
	h.ensure(t, k, fake("-slow-tool", "slow"))

	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	started := make(chan struct{}, 1)
	done := make(chan error, 1)
	go func() {
		_, err := h.sup.CallTool(ctx, k, &mcp.CallToolParams{Name: "slow", Arguments: slowArgs(10000, 10*time.Millisecond)},
			func(*mcp.ProgressNotificationParams) {
				select {
				case started <- struct{}{}:
				default:
				}
			})
		done <- err
	}()
	select {
	case <-started: // the server is working on it
	case <-time.After(deadline):
		t.Fatal("no progress from the slow tool")
	}
	cancel()
	select {
	case err := <-done:
		require.ErrorIs(t, err, context.Canceled)
	case <-time.After(deadline):
		t.Fatal("the cancelled call did not return")
	}

	// The server saw notifications/cancelled: its tool counts it.
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		res, err := h.sup.CallTool(callCtx(t), k, &mcp.CallToolParams{Name: "slow_cancelled"}, nil)
		require.NoError(c, err)
		assert.Equal(c, "1", text(t, res))
	}, deadline, 20*time.Millisecond)
	assert.Zero(t, h.sup.InFlight(k))
}

func TestACallToAServerNotRunningFailsAtOnceNamingItsState(t *testing.T) {
	t.Parallel()
	h := newHarness(t, supervisor.Options{CallWait: time.Hour}) // not a wait: an answer
	unknown := key("unknown")
	_, err := h.sup.CallTool(callCtx(t), unknown, &mcp.CallToolParams{Name: "echo"}, nil)
	require.ErrorIs(t, err, supervisor.ErrNotRunning)
	assert.Equal(t, "mcp server MCPServer/default/unknown is not running (state unknown)", err.Error())

	stopped := key("stopped")
	h.ensure(t, stopped, fake())
	require.NoError(t, h.sup.Stop(t.Context(), stopped))
	_, err = h.sup.ListPrompts(callCtx(t), stopped)
	require.ErrorIs(t, err, supervisor.ErrNotRunning)

	crashing := key("crashing")
	h.ensure(t, crashing, fake("-crash-after", "50ms"))
	h.rec.waitFor(t, crashing, "failed", func(o supervisor.Observed) bool { return o.State == v1alpha1.MCPServerStateFailed })
	_, err = h.sup.CallTool(callCtx(t), crashing, &mcp.CallToolParams{Name: "echo"}, nil)
	require.ErrorIs(t, err, supervisor.ErrNotRunning)
	var se *supervisor.ServerError
	require.ErrorAs(t, err, &se)
	assert.Equal(t, v1alpha1.MCPServerStateFailed, se.State)
	assert.Contains(t, err.Error(), "(state Failed): last error: exited with exit code 1")
	assert.NotContains(t, err.Error(), "stderr", "the first line of the last error, not its stderr tail")
}

func TestACallToAStartingServerWaitsForItOrFailsAfterCallWait(t *testing.T) {
	t.Parallel()
	h := newHarness(t, supervisor.Options{})
	k := key("starting")
	go func() { _, _ = h.sup.Ensure(t.Context(), k, fake("-slow-start", "500ms")) }()
	h.rec.waitFor(t, k, "starting", func(o supervisor.Observed) bool { return o.State == v1alpha1.MCPServerStateStarting })

	res, err := h.sup.CallTool(callCtx(t), k, &mcp.CallToolParams{Name: "echo"}, nil)
	require.NoError(t, err, "waited for the start")
	assert.Equal(t, "echo {}", text(t, res))

	impatient := newHarness(t, supervisor.Options{CallWait: 50 * time.Millisecond})
	slow := key("slow-start")
	go func() { _, _ = impatient.sup.Ensure(t.Context(), slow, fake("-slow-start", "5s")) }()
	impatient.rec.waitFor(t, slow, "starting", func(o supervisor.Observed) bool { return o.State == v1alpha1.MCPServerStateStarting })
	_, err = impatient.sup.CallTool(callCtx(t), slow, &mcp.CallToolParams{Name: "echo"}, nil)
	require.ErrorIs(t, err, supervisor.ErrNotReady)
	assert.Equal(t, "mcp server MCPServer/default/slow-start did not become ready in time (state Starting): waited 50ms for it to run", err.Error())
}

func TestACallDuringARestartWaitsForTheNewInstance(t *testing.T) {
	t.Parallel()
	h := newHarness(t, supervisor.Options{})
	k := key("restarting")
	old := h.ensure(t, k, fake("-tools", "echo"))

	restarted := make(chan supervisor.Observed, 1)
	go func() {
		_, err := h.sup.Ensure(t.Context(), k, fake("-tools", "echo", "-slow-start", "300ms"))
		assert.NoError(t, err)
		obs, _, err := h.sup.Wait(t.Context(), k) // the restart runs on the supervisor's goroutine
		assert.NoError(t, err)
		restarted <- obs
	}()
	h.rec.waitFor(t, k, "restarting", func(o supervisor.Observed) bool {
		return o.State == v1alpha1.MCPServerStateStarting && o.RestartCount == 1
	})
	res, err := h.sup.CallTool(callCtx(t), k, &mcp.CallToolParams{Name: "echo"}, nil)
	require.NoError(t, err)
	assert.Equal(t, "echo {}", text(t, res))
	obs := <-restarted
	assert.NotEqual(t, old.PID, obs.PID)
}

func TestAServerKilledMidCallFailsTheCallSayingItDied(t *testing.T) {
	t.Parallel()
	h := newHarness(t, supervisor.Options{})
	k := key("killed")
	obs := h.ensure(t, k, fake("-slow-tool", "slow"))

	const calls = 3
	progressed := make(chan struct{}, calls)
	errs := make(chan error, calls)
	for range calls {
		go func() {
			var once sync.Once
			_, err := h.sup.CallTool(callCtx(t), k, &mcp.CallToolParams{Name: "slow", Arguments: slowArgs(100000, 10*time.Millisecond)},
				func(*mcp.ProgressNotificationParams) { once.Do(func() { progressed <- struct{}{} }) })
			errs <- err
		}()
	}
	for range calls {
		<-progressed
	}
	require.Equal(t, calls, h.sup.InFlight(k))
	killed := time.Now()
	require.NoError(t, proctest.Kill(obs.PID))
	var slowest time.Duration
	for range calls {
		select {
		case err := <-errs:
			slowest = max(slowest, time.Since(killed))
			require.ErrorIs(t, err, supervisor.ErrDied)
			assert.Contains(t, err.Error(), "mcp server MCPServer/default/killed died while the call was pending")
			assert.Contains(t, err.Error(), "was killed by signal 9", "the monitor's verdict")
		case <-time.After(deadline):
			t.Fatal("a call on a killed server hangs")
		}
	}
	t.Logf("pending calls failed %s after the kill", slowest)
	assert.Zero(t, h.sup.InFlight(k))
}

func TestARemoteServerKilledMidCallFailsTheCall(t *testing.T) {
	t.Parallel()
	for _, typ := range []v1alpha1.MCPServerType{v1alpha1.MCPServerTypeStreamableHTTP, v1alpha1.MCPServerTypeSSE} {
		t.Run(string(typ), func(t *testing.T) {
			t.Parallel()
			h := newHarness(t, supervisor.Options{PingTimeout: 500 * time.Millisecond})
			url, server := startHTTPFake(t, "-slow-tool", "slow")
			if typ == v1alpha1.MCPServerTypeSSE {
				url = strings.TrimSuffix(url, "/mcp") + "/sse"
			}
			k := key("remote-killed")
			h.ensure(t, k, remote(typ, url))

			progressed := make(chan struct{})
			errs := make(chan error, 1)
			go func() {
				var once sync.Once
				_, err := h.sup.CallTool(callCtx(t), k, &mcp.CallToolParams{Name: "slow", Arguments: slowArgs(100000, 10*time.Millisecond)},
					func(*mcp.ProgressNotificationParams) { once.Do(func() { close(progressed) }) })
				errs <- err
			}()
			<-progressed
			killed := time.Now()
			require.NoError(t, server.Process.Kill())
			select {
			case err := <-errs:
				t.Logf("the pending call failed %s after the kill: %v", time.Since(killed), err)
				require.ErrorIs(t, err, supervisor.ErrDied)
				assert.Contains(t, err.Error(), "remote-killed")
			case <-time.After(deadline):
				t.Fatal("a call on a killed remote server hangs")
			}
			h.rec.waitFor(t, k, "disconnected", func(o supervisor.Observed) bool { return o.State == disconnected })
		})
	}
}

// TestASpecChangeRestartDrainsTheCallsInFlight: twenty calls in flight on
// the old instance finish there; a call made during the drain waits for the
// new instance.
func TestASpecChangeRestartDrainsTheCallsInFlight(t *testing.T) {
	t.Parallel()
	h := newHarness(t, supervisor.Options{})
	k := key("drain")
	old := h.ensure(t, k, fake("-slow-tool", "slow"))

	const calls = 20
	type outcome struct {
		res *mcp.CallToolResult
		err error
	}
	outcomes := make(chan outcome, calls)
	for range calls {
		go func() {
			res, err := h.sup.CallTool(callCtx(t), k, &mcp.CallToolParams{Name: "slow", Arguments: slowArgs(10, 30*time.Millisecond)}, nil)
			outcomes <- outcome{res, err}
		}()
	}
	require.Eventually(t, func() bool { return h.sup.InFlight(k) == calls }, deadline, time.Millisecond)

	restarted := make(chan supervisor.Observed, 1)
	go func() {
		_, err := h.sup.Ensure(t.Context(), k, fake("-slow-tool", "slow", "-tools", "echo,added"))
		assert.NoError(t, err)
		obs, _, err := h.sup.Wait(t.Context(), k) // the restart runs on the supervisor's goroutine
		assert.NoError(t, err)
		restarted <- obs
	}()
	require.Eventually(t, func() bool { return strings.Contains(h.logs.String(), "draining its calls") }, deadline, time.Millisecond)
	late, err := h.sup.CallTool(callCtx(t), k, &mcp.CallToolParams{Name: "added"}, nil)
	require.NoError(t, err, "a call during the drain waits for the new instance")
	assert.Equal(t, "added {}", text(t, late))

	for range calls {
		o := <-outcomes
		require.NoError(t, o.err)
		assert.Equal(t, map[string]any{"steps": float64(10), "pid": float64(old.PID)}, o.res.StructuredContent, "finished on the old server")
	}
	obs := <-restarted
	assert.NotEqual(t, old.PID, obs.PID)
	assert.Contains(t, obs.Tools, "added")
}

// TestADrainThatRunsOutFailsTheCallsLeftClearly: calls that outlast
// DrainTimeout are cancelled on the old server and fail with ErrStopped.
func TestADrainThatRunsOutFailsTheCallsLeftClearly(t *testing.T) {
	t.Parallel()
	h := newHarness(t, supervisor.Options{DrainTimeout: 100 * time.Millisecond})
	k := key("drain-out")
	h.ensure(t, k, fake("-slow-tool", "slow"))

	const calls = 20
	errs := make(chan error, calls)
	for range calls {
		go func() {
			_, err := h.sup.CallTool(callCtx(t), k, &mcp.CallToolParams{Name: "slow", Arguments: slowArgs(100000, 10*time.Millisecond)}, nil)
			errs <- err
		}()
	}
	require.Eventually(t, func() bool { return h.sup.InFlight(k) == calls }, deadline, time.Millisecond)
	h.ensure(t, k, fake("-slow-tool", "slow", "-tools", "echo,added"))
	for range calls {
		select {
		case err := <-errs:
			require.ErrorIs(t, err, supervisor.ErrStopped)
			assert.Contains(t, err.Error(), "restarted for a changed spec; its calls had 100ms to finish")
		case <-time.After(deadline):
			t.Fatal("a call left by a drain hangs")
		}
	}
	assert.Zero(t, h.sup.InFlight(k))
}

func TestToolChangesOfTheServersOwnReachObservedWithDefinitions(t *testing.T) {
	t.Parallel()
	h := newHarness(t, supervisor.Options{})
	k := key("late")
	first := h.ensure(t, k, fake("-add-tool-after", "100ms"))
	changed := h.rec.waitFor(t, k, "late tool", func(o supervisor.Observed) bool { return len(o.ToolDefs) == 2 })
	assert.Equal(t, []string{"echo", "late"}, changed.Tools)
	assert.Equal(t, "late", changed.ToolDefs[1].Name)
	assert.True(t, changed.ListedAt.After(first.ListedAt))
}

func TestResourcesAndPromptsOfTheNpmServerEverything(t *testing.T) {
	t.Parallel()
	bin := npmtest.ServerEverything(t)
	h := newHarness(t, supervisor.Options{})
	k := key("everything")
	h.ensure(t, k, v1alpha1.MCPServerSpec{Type: v1alpha1.MCPServerTypeStdio, Command: bin, Args: []string{"stdio"}, Timeout: 30})

	resources, err := h.sup.ListResources(callCtx(t), k)
	require.NoError(t, err)
	require.NotEmpty(t, resources)
	read, err := h.sup.ReadResource(callCtx(t), k, &mcp.ReadResourceParams{URI: resources[0].URI})
	require.NoError(t, err)
	require.NotEmpty(t, read.Contents)
	assert.Equal(t, resources[0].URI, read.Contents[0].URI)

	templates, err := h.sup.ListResourceTemplates(callCtx(t), k)
	require.NoError(t, err)
	assert.NotEmpty(t, templates)

	prompts, err := h.sup.ListPrompts(callCtx(t), k)
	require.NoError(t, err)
	require.NotEmpty(t, prompts)
	var simple string
	for _, p := range prompts {
		if len(p.Arguments) == 0 {
			simple = p.Name
		}
	}
	require.NotEmpty(t, simple, "a prompt without arguments: %+v", prompts)
	got, err := h.sup.GetPrompt(callCtx(t), k, &mcp.GetPromptParams{Name: simple})
	require.NoError(t, err)
	assert.NotEmpty(t, got.Messages)

	fakeKey := key("plain")
	h.ensure(t, fakeKey, fake())
	none, err := h.sup.ListResources(callCtx(t), fakeKey)
	require.NoError(t, err, "a server without resources has none, no error")
	assert.Empty(t, none)
}

// A call the server never answers ends after the server's spec.timeout,
// whoever made it (the caller's context has no deadline), with an error
// naming the server, the tool and the timeout, and is cancelled on the
// server.
func TestACallTheServerNeverAnswersEndsAfterItsSpecTimeout(t *testing.T) {
	t.Parallel()
	h := newHarness(t, supervisor.Options{})
	k := key("mute")
	spec := fake("-slow-tool", "slow")
	spec.Timeout = 4 // seconds: room for the start on a loaded machine
	h.ensure(t, k, spec)

	done := make(chan error, 1)
	go func() {
		_, err := h.sup.CallTool(context.Background(), k, &mcp.CallToolParams{Name: "slow", Arguments: slowArgs(100000, 10*time.Millisecond)}, nil)
		done <- err
	}()
	select {
	case err := <-done:
		require.Error(t, err)
		assert.Contains(t, err.Error(), "mcp server MCPServer/default/mute")
		assert.Contains(t, err.Error(), "tools/call slow")
		assert.Contains(t, err.Error(), "no answer within 4s (spec.timeout)")
	case <-time.After(deadline + 4*time.Second):
		t.Fatal("the call outlived its server's timeout")
	}
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		res, err := h.sup.CallTool(callCtx(t), k, &mcp.CallToolParams{Name: "slow_cancelled"}, nil)
		require.NoError(c, err)
		assert.Equal(c, "1", text(t, res))
	}, deadline, 20*time.Millisecond)
}
