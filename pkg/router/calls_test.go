package router_test

import (
	"log/slog"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/musterd/musterd/pkg/catalogue"
	"github.com/musterd/musterd/pkg/events"
	"github.com/musterd/musterd/pkg/router"
)

type counted struct {
	server events.Key
	count  router.CallCount
}

// told collects what OnCallsCounted is told.
type told struct {
	mu  sync.Mutex
	got []counted
}

func (c *told) add(k events.Key, n router.CallCount) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.got = append(c.got, counted{k, n})
}

func (c *told) take() []counted {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := c.got
	c.got = nil
	return out
}

// Each server's calls are counted in 10-second intervals, its errors (an
// error or an isError result) apart; an interval with calls is told once,
// when it is over, whatever the number of its calls, and nothing is told
// while nobody calls. The history holds the last 60 intervals.
func TestCallsAreCountedPerIntervalAndToldOncePerInterval(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		epoch := time.Now() // the bubble's: 2000-01-01 00:00:00 UTC, on an interval's start
		f := &fakeServers{result: &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ok"}}}}
		cat := catalogue.New(catalogue.Options{})
		declared := map[events.Key]bool{key("echo"): true, key("other"): true}
		var mu sync.Mutex
		var tell told
		r, err := router.New(router.Options{Catalogue: cat, Servers: f, Logger: slog.New(slog.DiscardHandler),
			Declared:       func(k events.Key) bool { mu.Lock(); defer mu.Unlock(); return declared[k] },
			OnCallsCounted: tell.add,
		})
		require.NoError(t, err)
		cat.Update(key("echo"), catalogue.Naming{}, defs("echo"), time.Time{})
		cat.Update(key("other"), catalogue.Naming{}, defs("ping"), time.Time{})
		synctest.Wait()
		call := func(name string) {
			_, _ = r.CallTool(t.Context(), name, nil, nil)
		}

		// Interval 0: two good calls, a tool error, an error, and a burst of
		// 1000 calls at 5s; one call through the server's own view.
		call("x_echo_echo")
		call("x_echo_echo")
		f.result = &mcp.CallToolResult{IsError: true}
		call("x_echo_echo")
		f.result, f.err = nil, assert.AnError
		call("x_echo_echo")
		f.result, f.err = &mcp.CallToolResult{}, nil
		time.Sleep(5 * time.Second)
		for range 1000 {
			call("x_echo_echo")
		}
		_, err = r.CallServerTool(t.Context(), key("echo"), "echo", nil, nil)
		require.NoError(t, err)
		call("x_unknown") // refused: reaches no server, counts for none
		synctest.Wait()
		assert.Empty(t, tell.take(), "nothing is told before the interval is over")

		time.Sleep(5*time.Second - time.Nanosecond)
		synctest.Wait()
		assert.Empty(t, tell.take(), "nothing is told before the interval is over")
		time.Sleep(time.Nanosecond)
		synctest.Wait()
		assert.Equal(t, []counted{{key("echo"), router.CallCount{Start: epoch.UTC(), Interval: 10 * time.Second, Calls: 1005, Errors: 2}}},
			tell.take(), "the burst is one notice, after the interval")

		h := r.CallHistory(key("echo"))
		assert.Equal(t, epoch.Add(10*time.Second-590*time.Second).UTC(), h.Start, "60 intervals, the last the one running now (at 10s)")
		assert.Equal(t, 10*time.Second, h.Interval)
		wantCalls, wantErrors := make([]int, 60), make([]int, 60)
		wantCalls[58], wantErrors[58] = 1005, 2
		assert.Equal(t, wantCalls, h.Calls)
		assert.Equal(t, wantErrors, h.Errors)
		assert.Equal(t, make([]int, 60), r.CallHistory(key("other")).Calls, "a server without calls has none")

		// Intervals 1 (at 15s) and 3 (at 31s): each told once, after it.
		time.Sleep(5 * time.Second)
		call("x_echo_echo")
		call("x_other_ping")
		time.Sleep(16 * time.Second)
		call("x_echo_echo")
		time.Sleep(9 * time.Second) // 40s
		synctest.Wait()
		got := tell.take()
		start := func(s int) time.Time { return epoch.Add(time.Duration(s) * time.Second).UTC() }
		assert.ElementsMatch(t, []counted{
			{key("echo"), router.CallCount{Start: start(10), Interval: 10 * time.Second, Calls: 1}},
			{key("other"), router.CallCount{Start: start(10), Interval: 10 * time.Second, Calls: 1}},
			{key("echo"), router.CallCount{Start: start(30), Interval: 10 * time.Second, Calls: 1}},
		}, got)
		h = r.CallHistory(key("echo"))
		assert.Equal(t, []int{1005, 1, 0, 1, 0}, h.Calls[55:], "intervals 0 to 4, the last running")

		// Nobody calls for ten minutes: nothing is told, and the history
		// forgets what is older than its 60 intervals.
		time.Sleep(10 * time.Minute)
		synctest.Wait()
		assert.Empty(t, tell.take(), "idle: nothing is told")
		assert.Equal(t, make([]int, 60), r.CallHistory(key("echo")).Calls, "older than the history")

		// A deleted server's history goes with it.
		call("x_other_ping")
		assert.Equal(t, 1, r.CallHistory(key("other")).Calls[59])
		mu.Lock()
		declared[key("other")] = false
		mu.Unlock()
		cat.Remove(key("other"))
		synctest.Wait()
		assert.Equal(t, make([]int, 60), r.CallHistory(key("other")).Calls, "forgotten with its definition")
		time.Sleep(10 * time.Second)
		synctest.Wait()
		assert.Empty(t, tell.take(), "a forgotten server's interval is not told")
	})
}
