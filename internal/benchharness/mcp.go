package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// mcpFake is the test server beside the musterd binary (make build puts
// both in bin/).
func mcpFake(cfg config) string { return filepath.Join(filepath.Dir(cfg.musterd), "mcp-fake") }

// serverFile declares a stdio mcp-fake server offering tool.
func serverFile(name, fake, tool string) []byte {
	return fmt.Appendf(nil, `apiVersion: muster.giantswarm.io/v1alpha1
kind: MCPServer
metadata:
  name: %s
spec:
  type: stdio
  autoStart: true
  command: %q
  args: ["-tools", %q]
`, name, fake, tool)
}

// connect starts a go-sdk client session on t.
func connect(ctx context.Context, t mcp.Transport, opts *mcp.ClientOptions) (*mcp.ClientSession, error) {
	return mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "0"}, opts).Connect(ctx, t, nil)
}

// timeCalls makes n sequential calls of tool on cs and returns each one's
// latency.
func timeCalls(ctx context.Context, cs *mcp.ClientSession, tool string, n int) ([]time.Duration, error) {
	out := make([]time.Duration, 0, n)
	for i := range n {
		start := time.Now()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: map[string]any{"i": i}})
		if err != nil {
			return nil, err
		}
		if res.IsError {
			return nil, fmt.Errorf("%s failed: %v", tool, res.Content)
		}
		out = append(out, time.Since(start))
	}
	return out, nil
}

// measureMCP: calls through musterd's /mcp/direct to a stdio server,
// beside calls of a client that spawned the same server itself, in
// alternating rounds of one run; then a new server file's time until a
// connected client receives list_changed and lists its tool, beside the
// server's own start and initialize, spawned directly.
func measureMCP(cfg config, res *results) error {
	fake := mcpFake(cfg)
	if _, err := os.Stat(fake); err != nil {
		return fmt.Errorf("mcp-fake beside musterd: %w", err)
	}
	d, err := startDaemon(cfg, 0)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), daemonDeadline)
	defer cancel()
	err = measureMCPDaemon(ctx, cfg, d, fake, res)
	return errors.Join(err, d.stop())
}

func measureMCPDaemon(ctx context.Context, cfg config, d *daemon, fake string, res *results) error {
	if err := os.MkdirAll(filepath.Join(d.config, "mcpservers"), 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(d.config, "mcpservers", "bench.yaml"), serverFile("bench", fake, "echo"), 0o644); err != nil {
		return err
	}
	changed := make(chan struct{}, 1)
	viaMusterd, err := connect(ctx, &mcp.StreamableClientTransport{Endpoint: "http://" + d.addr + "/mcp/direct"}, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
			select {
			case changed <- struct{}{}:
			default:
			}
		},
	})
	if err != nil {
		return err
	}
	defer viaMusterd.Close()
	listed := func(tool string) (bool, error) {
		for t, err := range viaMusterd.Tools(ctx, nil) {
			if err != nil {
				return false, err
			}
			if t.Name == tool {
				return true, nil
			}
		}
		return false, nil
	}
	for {
		ok, err := listed("x_bench_echo")
		if err != nil || ok {
			if err != nil {
				return err
			}
			break
		}
		select {
		case <-changed:
		case <-time.After(20 * time.Millisecond):
		case <-ctx.Done():
			return fmt.Errorf("x_bench_echo never listed: %w", ctx.Err())
		}
	}
	direct, err := connect(ctx, &mcp.CommandTransport{Command: exec.Command(fake, "-tools", "echo")}, nil)
	if err != nil {
		return err
	}
	defer direct.Close()

	// Warm both paths, then alternate rounds so that both see the same
	// machine load.
	const rounds = 10
	per := max(cfg.mcpCalls/rounds, 1)
	if _, err := timeCalls(ctx, viaMusterd, "x_bench_echo", per); err != nil {
		return err
	}
	if _, err := timeCalls(ctx, direct, "echo", per); err != nil {
		return err
	}
	var through, spawned []time.Duration
	for range rounds {
		t, err := timeCalls(ctx, viaMusterd, "x_bench_echo", per)
		if err != nil {
			return err
		}
		s, err := timeCalls(ctx, direct, "echo", per)
		if err != nil {
			return err
		}
		through, spawned = append(through, t...), append(spawned, s...)
	}
	sortDurations(through)
	sortDurations(spawned)
	res.set("mcp_call_p50_us", 1000*percentile(through, 0.50))
	res.set("mcp_call_p99_us", 1000*percentile(through, 0.99))
	res.set("direct_stdio_call_p50_us", 1000*percentile(spawned, 0.50))
	res.set("direct_stdio_call_p99_us", 1000*percentile(spawned, 0.99))

	// A new server file until its tool is listed after list_changed, and
	// the server's own start and initialize, alternately.
	var appears, initialize []time.Duration
	for i := range cfg.mcpAppearSamples {
		name := fmt.Sprintf("new%03d", i)
		tool := "x_" + name + "_t" + name
		file := filepath.Join(d.config, "mcpservers", name+".yaml")
		for len(changed) > 0 {
			<-changed
		}
		start := time.Now()
		if err := os.WriteFile(file, serverFile(name, fake, "t"+name), 0o644); err != nil {
			return err
		}
		for {
			select {
			case <-changed:
			case <-ctx.Done():
				return fmt.Errorf("sample %d: no list_changed bringing %s: %w", i, tool, ctx.Err())
			}
			ok, err := listed(tool)
			if err != nil {
				return err
			}
			if ok {
				appears = append(appears, time.Since(start))
				break
			}
		}
		begin := time.Now()
		own, err := connect(ctx, &mcp.CommandTransport{Command: exec.Command(fake, "-tools", "t"+name)}, nil)
		if err != nil {
			return err
		}
		initialize = append(initialize, time.Since(begin))
		_ = own.Close()
		if err := os.Remove(file); err != nil {
			return err
		}
		for {
			ok, err := listed(tool)
			if err != nil {
				return err
			}
			if !ok {
				break
			}
			select {
			case <-changed:
			case <-time.After(20 * time.Millisecond):
			case <-ctx.Done():
				return fmt.Errorf("sample %d: %s never went: %w", i, tool, ctx.Err())
			}
		}
		time.Sleep(daemonDebounce + 100*time.Millisecond) // the next file is a leading edge
	}
	sortDurations(appears)
	sortDurations(initialize)
	res.set("tool_appears_raw_p50_ms", percentile(appears, 0.50))
	res.set("server_initialize_p50_ms", percentile(initialize, 0.50))
	res.set("tool_appears_ms", percentile(appears, 0.50)-percentile(initialize, 0.50))
	return nil
}
