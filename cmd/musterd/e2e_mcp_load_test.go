package main

// Load on the MCP endpoint: many concurrent go-sdk sessions on /mcp/direct
// calling one stdio server through the real musterd binary. It passes on
// correctness alone (every call answered, right, within callDeadline);
// the latencies and throughput are logged for docs/performance.md, never asserted.

import (
	"context"
	"flag"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
)

var (
	loadSessions = flag.Int("mcp.load.sessions", 50, "concurrent sessions of TestE2EMCPLoad")
	loadCalls    = flag.Int("mcp.load.calls", 200, "calls per session of TestE2EMCPLoad")
)

func TestE2EMCPLoadConcurrentSessionsOnTheDirectView(t *testing.T) {
	e := startFS(t)
	marker := newMarker()
	e.write(t, "mcpservers/load.yaml", mcpServerYAML("load", stdioSpec("-tools", "echo,"+marker)...))
	e.waitServer(t, "load", "running", serving("load", "echo", marker))

	sessions, calls := *loadSessions, *loadCalls
	clients := make([]*mcp.ClientSession, sessions)
	for i := range clients {
		clients[i] = e.mcpClient(t, "/mcp/direct", "2025-06-18", nil)
	}
	eventually(t, "x_load_echo is served", func() bool { return slices.Contains(toolNames(t, clients[0]), "x_load_echo") })

	var (
		errs      atomic.Int64
		firstErrs sync.Map // session → its first error, for the failure message
	)
	took := make([][]time.Duration, sessions)
	var wg sync.WaitGroup
	start := time.Now()
	for s, cs := range clients {
		took[s] = make([]time.Duration, 0, calls)
		wg.Go(func() {
			for c := range calls {
				want := fmt.Sprintf(`{"c":%d,"s":%d}`, c, s)
				ctx, cancel := context.WithTimeout(context.Background(), callDeadline)
				began := time.Now()
				res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "x_load_echo", Arguments: map[string]any{"s": s, "c": c}})
				took[s] = append(took[s], time.Since(began))
				cancel()
				switch {
				case err != nil:
					err = fmt.Errorf("call %d: %w", c, err)
				case res.IsError || len(res.Content) != 1:
					err = fmt.Errorf("call %d: result %+v", c, res)
				default:
					if tc, ok := res.Content[0].(*mcp.TextContent); !ok || tc.Text != "echo "+want {
						err = fmt.Errorf("call %d: answered %+v, want echo %s", c, res.Content[0], want)
					}
				}
				if err != nil {
					errs.Add(1)
					firstErrs.LoadOrStore(s, err)
				}
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)

	all := slices.Concat(took...)
	slices.Sort(all)
	total := sessions * calls
	pct := func(p float64) time.Duration { return all[int(p*float64(len(all)-1))] }
	load, _ := os.ReadFile("/proc/loadavg")
	t.Logf("MCP load: %d sessions × %d calls = %d calls through /mcp/direct to a stdio server in %s: %.0f calls/s; p50 %s, p99 %s, max %s; %d errors; musterd and mcp-fake built with -race; load average %s",
		sessions, calls, total, elapsed.Round(time.Millisecond), float64(total)/elapsed.Seconds(),
		pct(0.50).Round(time.Microsecond), pct(0.99).Round(time.Microsecond), all[len(all)-1].Round(time.Microsecond),
		errs.Load(), strings.Join(strings.Fields(string(load))[:3], " "))
	var msgs []string
	firstErrs.Range(func(s, err any) bool {
		msgs = append(msgs, fmt.Sprintf("session %d: %v", s, err))
		return len(msgs) < 5
	})
	assert.Zero(t, errs.Load(), "calls that failed or answered wrong: %s", strings.Join(msgs, "; "))
	assert.Less(t, all[len(all)-1], callDeadline, "no call hung")
}
