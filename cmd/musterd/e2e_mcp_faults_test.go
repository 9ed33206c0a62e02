package main

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// slowCall calls x_slow_slow for steps of interval, with a progress token;
// the first progress received is sent on progressed.
func slowCall(ctx context.Context, cs *mcp.ClientSession, steps int, interval string) (*mcp.CallToolResult, error) {
	params := &mcp.CallToolParams{Name: "x_slow_slow", Arguments: map[string]any{"steps": steps, "interval": interval}}
	params.SetProgressToken(fmt.Sprintf("p-%d", time.Now().UnixNano()))
	return cs.CallTool(ctx, params)
}

// resultText is a result's first text, or the error's.
func resultText(res *mcp.CallToolResult, err error) string {
	if err != nil {
		return "error: " + err.Error()
	}
	if len(res.Content) == 0 {
		return ""
	}
	if tc, ok := res.Content[0].(*mcp.TextContent); ok {
		return tc.Text
	}
	return fmt.Sprintf("%T", res.Content[0])
}

// The faults the issue names, each through the endpoint against a real
// stdio server: a client that gives up mid-call, a call to a server being
// restarted, a spec-change restart with 20 calls in flight, and a server
// killed mid-call. No call hangs; each ends with a result or an error that
// says why.
func TestE2EFaultsThroughTheEndpoint(t *testing.T) {
	e := startFS(t)
	marker := newMarker()
	spec := func(extra string) string {
		return mcpServerYAML("slow", stdioSpec("-tools", "echo,"+marker+extra, "-slow-tool", "slow")...)
	}
	e.write(t, "mcpservers/slow.yaml", spec(""))
	progressed := make(chan struct{}, 256)
	cs := e.mcpClient(t, "/mcp/direct", "2025-06-18", &mcp.ClientOptions{
		ProgressNotificationHandler: func(context.Context, *mcp.ProgressNotificationClientRequest) {
			select {
			case progressed <- struct{}{}:
			default:
			}
		},
	})
	eventually(t, "x_slow_slow is listed", func() bool { return slices.Contains(toolNames(t, cs), "x_slow_slow") })
	// mcp-fake's slow_cancelled, exposed without its prefix repeated.
	cancelledCount := func(t *testing.T) string {
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "x_slow_cancelled"})
		require.NoError(t, err)
		return resultText(res, nil)
	}
	drain := func() {
		for {
			select {
			case <-progressed:
			default:
				return
			}
		}
	}

	t.Run("a client that gives up mid-call cancels it at the server", func(t *testing.T) {
		drain()
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() {
			_, err := slowCall(ctx, cs, 600, "100ms")
			done <- err
		}()
		select {
		case <-progressed: // the server works on it
		case <-time.After(e2eDeadline):
			t.Fatal("no progress from the slow call")
		}
		cancel()
		require.Error(t, <-done)
		eventually(t, "the server saw the cancellation", func() bool { return cancelledCount(t) == "1" })

		// A client that goes away altogether, mid-call: its session
		// closes, and its call is cancelled at the server.
		otherProgress := make(chan struct{}, 64)
		other := e.mcpClient(t, "/mcp/direct", "2025-06-18", &mcp.ClientOptions{
			ProgressNotificationHandler: func(context.Context, *mcp.ProgressNotificationClientRequest) {
				select {
				case otherProgress <- struct{}{}:
				default:
				}
			},
		})
		go func() { _, _ = slowCall(context.Background(), other, 600, "100ms") }()
		select {
		case <-otherProgress: // the server works on it
		case <-time.After(e2eDeadline):
			t.Fatal("no progress from the second slow call")
		}
		// The client ends its session as the protocol has it, a DELETE
		// (the go-sdk's client sends it only once its own calls are over).
		req, err := http.NewRequest(http.MethodDelete, "http://"+e.addr+"/mcp/direct", nil)
		require.NoError(t, err)
		req.Header.Set("Mcp-Session-Id", other.ID())
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		assert.Equal(t, http.StatusNoContent, resp.StatusCode)
		eventually(t, "the closed session's call was cancelled at the server", func() bool { return cancelledCount(t) == "2" })
	})

	t.Run("a spec-change restart with 20 calls in flight: each finishes or fails clearly", func(t *testing.T) {
		const calls = 20
		var wg sync.WaitGroup
		results := make([]string, calls)
		errs := make([]bool, calls)
		started := time.Now()
		for i := range calls {
			wg.Add(1)
			go func() {
				defer wg.Done()
				res, err := slowCall(context.Background(), cs, 5, "100ms")
				results[i] = resultText(res, err)
				errs[i] = err != nil || res.IsError
			}()
		}
		drain()
		<-progressed // the calls are under way
		e.write(t, "mcpservers/slow.yaml", spec(",extra"))
		finished := make(chan struct{})
		go func() { wg.Wait(); close(finished) }()
		select {
		case <-finished:
		case <-time.After(e2eDeadline):
			t.Fatalf("calls hang across a restart: %q", results)
		}
		ok, failed := 0, 0
		for i, r := range results {
			if errs[i] {
				failed++
				assert.NotEmpty(t, r, "a failure says why")
			} else {
				ok++
				assert.Contains(t, r, "slow done after 5 steps")
			}
		}
		t.Logf("20 calls across a spec-change restart: %d finished on the old server, %d failed clearly, all back in %s", ok, failed, time.Since(started).Round(time.Millisecond))
		eventually(t, "the restarted server offers its new tool", func() bool { return slices.Contains(toolNames(t, cs), "x_slow_extra") })
	})

	t.Run("a call to a server being restarted waits for it", func(t *testing.T) {
		e.write(t, "mcpservers/slow.yaml", spec(",extra,more"))
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "x_slow_echo", Arguments: map[string]any{"k": "v"}})
		require.NoError(t, err)
		text := resultText(res, nil)
		if res.IsError {
			assert.Contains(t, text, "slow", "a failure names the server")
		} else {
			assert.Equal(t, `echo {"k":"v"}`, text)
		}
		eventually(t, "the restarted server offers x_slow_more", func() bool { return slices.Contains(toolNames(t, cs), "x_slow_more") })
	})

	t.Run("a server killed mid-call fails the call, saying so", func(t *testing.T) {
		drain()
		type outcome struct {
			res *mcp.CallToolResult
			err error
			at  time.Time
		}
		done := make(chan outcome, 1)
		go func() {
			res, err := slowCall(context.Background(), cs, 600, "100ms")
			done <- outcome{res, err, time.Now()}
		}()
		select {
		case <-progressed:
		case <-time.After(e2eDeadline):
			t.Fatal("no progress from the slow call")
		}
		var victim *proc
		for _, p := range descendants(e.cmd.Process.Pid) {
			if slices.Contains(p.args, "echo,"+marker+",extra,more") {
				victim = &p
			}
		}
		require.NotNil(t, victim, "the server's process")
		killed := time.Now()
		require.NoError(t, syscall.Kill(victim.pid, syscall.SIGKILL))
		var o outcome
		select {
		case o = <-done:
		case <-time.After(e2eDeadline):
			t.Fatal("the call hangs on a dead server")
		}
		text := resultText(o.res, o.err)
		require.True(t, o.err != nil || o.res.IsError, "the call failed: %s", text)
		assert.True(t, strings.Contains(text, "slow") || strings.Contains(text, "exit") || strings.Contains(text, "closed"), "it says why: %s", text)
		t.Logf("a server killed mid-call: the call failed %s after the kill: %s", o.at.Sub(killed).Round(time.Millisecond), text)
	})
}
