package main

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// 50 concurrent sessions × 200 calls each through /mcp/direct to one stdio
// server: every call answers, correctly, within its deadline. The figures
// are logged as measured (the binary is built with -race for the tests,
// so they are slower than a release build's).
func TestE2ELoadFiftySessionsOfTwoHundredCalls(t *testing.T) {
	const sessions, calls = 50, 200
	e := startFS(t)
	e.write(t, "mcpservers/load.yaml", mcpServerYAML("load", stdioSpec("-tools", "echo")...))
	probe := e.mcpClient(t, "/mcp/direct", "2025-06-18", nil)
	eventually(t, "x_load_echo is listed", func() bool { return slices.Contains(toolNames(t, probe), "x_load_echo") })

	clients := make([]*mcp.ClientSession, sessions)
	for i := range clients {
		clients[i] = e.mcpClient(t, "/mcp/direct", "2025-06-18", nil)
	}
	var (
		mu        sync.Mutex
		latencies []time.Duration
		failures  []string
		hangs     int
	)
	var wg sync.WaitGroup
	start := time.Now()
	for s, cs := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for c := range calls {
				want := fmt.Sprintf("%d-%d", s, c)
				ctx, cancel := context.WithTimeout(context.Background(), e2eDeadline)
				began := time.Now()
				res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "x_load_echo", Arguments: map[string]any{"n": want}})
				took := time.Since(began)
				hung := ctx.Err() != nil
				cancel()
				mu.Lock()
				latencies = append(latencies, took)
				switch {
				case hung:
					hangs++
				case err != nil:
					failures = append(failures, err.Error())
				case res.IsError || resultText(res, nil) != `echo {"n":"`+want+`"}`:
					failures = append(failures, resultText(res, nil))
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	total := time.Since(start)
	require.Len(t, latencies, sessions*calls)
	assert.Zero(t, hangs, "calls that hit their deadline")
	assert.Empty(t, failures, "calls that failed or answered wrongly")
	slices.Sort(latencies)
	pct := func(p float64) time.Duration {
		return latencies[int(p*float64(len(latencies)-1))].Round(time.Microsecond)
	}
	t.Logf("%d sessions × %d calls through /mcp/direct to one stdio server: %d errors, %d hangs; %s in all (%.0f calls/s); latency p50 %s, p99 %s, max %s",
		sessions, calls, len(failures), hangs, total.Round(time.Millisecond), float64(len(latencies))/total.Seconds(), pct(0.5), pct(0.99), latencies[len(latencies)-1].Round(time.Microsecond))
}
