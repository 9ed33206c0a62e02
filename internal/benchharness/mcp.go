package main

// The MCP endpoint's measures, through the real binary:
//
//   - mcp_call_p50_us, mcp_call_p99_us: one go-sdk client calling a stdio
//     server's echo tool through musterd's /mcp/direct, one call at a
//     time; beside direct_stdio_call_p50_us and direct_stdio_call_p99_us,
//     a go-sdk client that spawns the same server itself and calls it.
//     The two alternate in rounds within one run, so that the shared
//     machine's load weighs on both alike. A third path alternates with
//     them, sdk_proxy_call_p50_us and _p99_us: the least gateway the same
//     SDK makes, in the harness's own process, a streamable HTTP server
//     whose one tool calls a stdio mcp-fake through a client session; the
//     floor of two hops, against which musterd's own cost shows; and
//     sdk_proxy_process_call_p50_us and _p99_us, the same gateway run as a
//     process of its own, as musterd is (mcp_floor.go).
//   - mcp_server_view_call_p50_us, _p99_us: the same server's echo called
//     through musterd's view of that server alone, /mcp/servers/bench, by
//     its own name, alternating with the others.
//   - tool_appears_ms: a new server file (written whole, by rename) until
//     a client connected to /mcp/direct receives list_changed and lists the
//     new tool, less server_initialize_ms, the median time the same server
//     takes to start, initialize and list its tools for a go-sdk client
//     spawning it itself (measured alternately in the same run): what
//     musterd adds to the server's own start. tool_appears_raw_ms is the
//     whole.
//
// The measures register themselves here, beside the others in main.go.

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

var (
	mcpFake = flag.String("mcp-fake", "bin/mcp-fake", "the stdio MCP server of the MCP measures (make build builds it)")
	// mcpCallRounds × mcpCallsPerRound calls each way.
	mcpCallRounds    = flag.Int("mcp-call-rounds", 10, "alternating rounds of the MCP call measure")
	mcpCallsPerRound = flag.Int("mcp-calls-per-round", 200, "calls per round and way of the MCP call measure")
	mcpAppearSamples = flag.Int("mcp-appear-samples", 20, "samples of the tool-appears measure")
)

func init() {
	measures = append(measures,
		struct {
			name, what string
			binary     bool
			run        func(config, *results) error
		}{"mcp", "the binary: MCP calls through /mcp/direct beside a client spawning the server", true, measureMCPCalls},
		struct {
			name, what string
			binary     bool
			run        func(config, *results) error
		}{"appears", "the binary: new server file to list_changed", true, measureToolAppears},
	)
	goals["mcp_call_p50_us"] = goal{"≤ 2 × direct_stdio_call_p50_us", func(v map[string]float64) bool {
		return v["mcp_call_p50_us"] <= 2*v["direct_stdio_call_p50_us"]
	}}
	goals["tool_appears_ms"] = goal{"≤ 20", func(v map[string]float64) bool { return v["tool_appears_ms"] <= 20 }}
}

// mcpDaemon is musterd running with one mcpservers/ folder, and a go-sdk
// client on its /mcp/direct.
type mcpDaemon struct {
	*daemon
	servers string
	session *mcp.ClientSession
	changed chan time.Time
}

func startMCPDaemon(cfg config) (*mcpDaemon, error) {
	d, err := startDaemon(cfg, 0)
	if err != nil {
		return nil, err
	}
	m := &mcpDaemon{daemon: d, servers: filepath.Join(d.config, "mcpservers"), changed: make(chan time.Time, 1024)}
	if err := os.MkdirAll(m.servers, 0o755); err != nil {
		return nil, errors.Join(err, d.stop())
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "benchharness", Version: "v1"}, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
			select {
			case m.changed <- time.Now():
			default:
			}
		},
	})
	m.session, err = client.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: "http://" + d.addr + "/mcp/direct", HTTPClient: &http.Client{}}, nil)
	if err != nil {
		return nil, errors.Join(fmt.Errorf("connect to /mcp/direct: %w", err), d.stop())
	}
	return m, nil
}

func (m *mcpDaemon) stop() error {
	return errors.Join(m.session.Close(), m.daemon.stop())
}

// declare writes the server file name whole: a temporary file renamed
// into place, as an editor saves, so that the watcher never reads half.
func (m *mcpDaemon) declare(name string, args ...string) error {
	fake, err := filepath.Abs(*mcpFake)
	if err != nil {
		return err
	}
	quoted := make([]string, len(args))
	for i, a := range args {
		quoted[i] = fmt.Sprintf("%q", a)
	}
	spec := fmt.Sprintf("apiVersion: muster.giantswarm.io/v1alpha1\nkind: MCPServer\nmetadata:\n  name: %s\nspec:\n  type: stdio\n  autoStart: true\n  command: %q\n  args: [%s]\n",
		name, fake, strings.Join(quoted, ", "))
	tmp := filepath.Join(m.servers, "."+name+".yaml.tmp")
	if err := os.WriteFile(tmp, []byte(spec), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, filepath.Join(m.servers, name+".yaml"))
}

// tools lists the tools /mcp/direct serves.
func (m *mcpDaemon) tools(ctx context.Context) ([]string, error) {
	var names []string
	for tool, err := range m.session.Tools(ctx, nil) {
		if err != nil {
			return nil, err
		}
		names = append(names, tool.Name)
	}
	return names, nil
}

// waitTool waits until /mcp/direct lists tool (present) or no longer
// does.
func (m *mcpDaemon) waitTool(tool string, present bool) error {
	ctx, cancel := context.WithTimeout(context.Background(), sampleDeadline)
	defer cancel()
	for {
		names, err := m.tools(ctx)
		if err != nil {
			return err
		}
		if slices.Contains(names, tool) == present {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s listed %v on /mcp/direct: not within %v", tool, !present, sampleDeadline)
		case <-time.After(time.Millisecond):
		}
	}
}

// spawnFake starts mcp-fake with args for a go-sdk client of its own and
// returns the session once it is initialized and has listed its tools.
func spawnFake(ctx context.Context, args ...string) (*mcp.ClientSession, error) {
	client := mcp.NewClient(&mcp.Implementation{Name: "benchharness", Version: "v1"}, nil)
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: exec.Command(*mcpFake, args...)}, nil)
	if err != nil {
		return nil, fmt.Errorf("spawn %s: %w", *mcpFake, err)
	}
	if _, err := cs.ListTools(ctx, nil); err != nil {
		return nil, errors.Join(err, cs.Close())
	}
	return cs, nil
}

// timeCalls calls tool n times on cs, one at a time, and returns each
// call's duration.
func timeCalls(cs *mcp.ClientSession, tool string, n int) ([]time.Duration, error) {
	out := make([]time.Duration, 0, n)
	args := map[string]any{"message": "bench"}
	for i := range n {
		ctx, cancel := context.WithTimeout(context.Background(), sampleDeadline)
		start := time.Now()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
		took := time.Since(start)
		cancel()
		if err != nil {
			return nil, fmt.Errorf("call %d of %s: %w", i, tool, err)
		}
		if res.IsError {
			return nil, fmt.Errorf("call %d of %s: tool error %+v", i, tool, res.Content)
		}
		out = append(out, took)
	}
	return out, nil
}

func microseconds(sorted []time.Duration, p float64) float64 {
	return percentile(sorted, p) * 1000
}

func measureMCPCalls(cfg config, res *results) error {
	m, err := startMCPDaemon(cfg)
	if err != nil {
		return err
	}
	defer m.stop()
	if err := m.declare("bench", "-tools", "echo"); err != nil {
		return err
	}
	if err := m.waitTool("x_bench_echo", true); err != nil {
		return err
	}
	view, err := mcp.NewClient(&mcp.Implementation{Name: "benchharness", Version: "v1"}, nil).Connect(context.Background(),
		&mcp.StreamableClientTransport{Endpoint: "http://" + m.addr + "/mcp/servers/bench", HTTPClient: &http.Client{}}, nil)
	if err != nil {
		return fmt.Errorf("connect to /mcp/servers/bench: %w", err)
	}
	defer view.Close()
	direct, err := spawnFake(context.Background(), "-tools", "echo")
	if err != nil {
		return err
	}
	defer direct.Close()

	// Warm both paths (connections, the runtime's pools) before measuring.
	if _, err := timeCalls(m.session, "x_bench_echo", 50); err != nil {
		return err
	}
	if _, err := timeCalls(direct, "echo", 50); err != nil {
		return err
	}
	if _, err := timeCalls(view, "echo", 50); err != nil {
		return err
	}
	proxy, stopProxy, err := startSDKProxy()
	if err != nil {
		return err
	}
	defer stopProxy()
	if _, err := timeCalls(proxy, "echo", 50); err != nil {
		return err
	}
	// The same bare gateway as a process of its own, as musterd is: a
	// third process to wake on the machine's cores (mcp_floor.go).
	proc, stopProc, err := startSDKProxyProcess()
	if err != nil {
		return err
	}
	defer stopProc()
	if _, err := timeCalls(proc, "echo", 50); err != nil {
		return err
	}
	var through, beside, floor, procFloor, alone []time.Duration
	for round := range *mcpCallRounds {
		t, err := timeCalls(m.session, "x_bench_echo", *mcpCallsPerRound)
		if err != nil {
			return fmt.Errorf("round %d through musterd: %w", round, err)
		}
		d, err := timeCalls(direct, "echo", *mcpCallsPerRound)
		if err != nil {
			return fmt.Errorf("round %d direct: %w", round, err)
		}
		p, err := timeCalls(proxy, "echo", *mcpCallsPerRound)
		if err != nil {
			return fmt.Errorf("round %d through the bare SDK proxy: %w", round, err)
		}
		q, err := timeCalls(proc, "echo", *mcpCallsPerRound)
		if err != nil {
			return fmt.Errorf("round %d through the bare SDK proxy process: %w", round, err)
		}
		a, err := timeCalls(view, "echo", *mcpCallsPerRound)
		if err != nil {
			return fmt.Errorf("round %d through the server's own view: %w", round, err)
		}
		through, beside, floor, procFloor = append(through, t...), append(beside, d...), append(floor, p...), append(procFloor, q...)
		alone = append(alone, a...)
	}
	sortDurations(through)
	sortDurations(beside)
	sortDurations(floor)
	sortDurations(procFloor)
	sortDurations(alone)
	res.set("mcp_server_view_call_p50_us", microseconds(alone, 0.50))
	res.set("mcp_server_view_call_p99_us", microseconds(alone, 0.99))
	res.set("mcp_call_p50_us", microseconds(through, 0.50))
	res.set("mcp_call_p99_us", microseconds(through, 0.99))
	res.set("direct_stdio_call_p50_us", microseconds(beside, 0.50))
	res.set("direct_stdio_call_p99_us", microseconds(beside, 0.99))
	res.set("sdk_proxy_call_p50_us", microseconds(floor, 0.50))
	res.set("sdk_proxy_call_p99_us", microseconds(floor, 0.99))
	res.set("sdk_proxy_process_call_p50_us", microseconds(procFloor, 0.50))
	res.set("sdk_proxy_process_call_p99_us", microseconds(procFloor, 0.99))
	fmt.Fprintf(cfg.log, "bench: %d calls each way, through musterd p50 %.0f µs p99 %.0f µs, direct p50 %.0f µs p99 %.0f µs, bare SDK proxy p50 %.0f µs p99 %.0f µs, the same as its own process p50 %.0f µs p99 %.0f µs (load %s)\n",
		len(through), res.values["mcp_call_p50_us"], res.values["mcp_call_p99_us"],
		res.values["direct_stdio_call_p50_us"], res.values["direct_stdio_call_p99_us"],
		res.values["sdk_proxy_call_p50_us"], res.values["sdk_proxy_call_p99_us"],
		res.values["sdk_proxy_process_call_p50_us"], res.values["sdk_proxy_process_call_p99_us"], procLoad())
	return nil
}

// startSDKProxy serves, on a loopback port of this process, a go-sdk
// streamable HTTP server whose tool echo calls a stdio mcp-fake's echo
// through a go-sdk client session, and returns a client session on it.
func startSDKProxy() (*mcp.ClientSession, func(), error) {
	backend, err := spawnFake(context.Background(), "-tools", "echo")
	if err != nil {
		return nil, nil, err
	}
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, nil, errors.Join(err, backend.Close())
	}
	srv := &http.Server{Handler: sdkProxyHandler(backend), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(listener) }()
	client := mcp.NewClient(&mcp.Implementation{Name: "benchharness", Version: "v1"}, nil)
	cs, err := client.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: "http://" + listener.Addr().String(), HTTPClient: &http.Client{}}, nil)
	if err != nil {
		return nil, nil, errors.Join(err, srv.Close(), backend.Close())
	}
	return cs, func() { _ = cs.Close(); _ = srv.Close(); _ = backend.Close() }, nil
}

// sdkProxyHandler is the least gateway the go-sdk makes: a streamable HTTP
// handler with the SDK's defaults, whose one tool echo calls backend's.
func sdkProxyHandler(backend *mcp.ClientSession) http.Handler {
	server := mcp.NewServer(&mcp.Implementation{Name: "bare-proxy", Version: "v1"}, nil)
	server.AddTool(&mcp.Tool{Name: "echo", InputSchema: map[string]any{"type": "object"}},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return backend.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: req.Params.Arguments})
		})
	return mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, nil)
}

func measureToolAppears(cfg config, res *results) error {
	m, err := startMCPDaemon(cfg)
	if err != nil {
		return err
	}
	defer m.stop()
	var appears, inits []time.Duration
	for i := range *mcpAppearSamples {
		// The server's own start: spawn, initialize, tools/list.
		start := time.Now()
		cs, err := spawnFake(context.Background(), "-tools", "echo")
		if err != nil {
			return err
		}
		inits = append(inits, time.Since(start))
		if err := cs.Close(); err != nil {
			return err
		}

		// The same server declared in a file, until a client hears of it.
		name := fmt.Sprintf("appear%03d", i)
		tool := "x_" + name + "_echo"
		drain(m.changed)
		start = time.Now()
		if err := m.declare(name, "-tools", "echo"); err != nil {
			return err
		}
		took, err := m.untilListChangedBrings(tool)
		if err != nil {
			return fmt.Errorf("sample %d: %w", i, err)
		}
		appears = append(appears, took.Sub(start))

		// Gone again, and quiet, before the next sample.
		if err := os.Remove(filepath.Join(m.servers, name+".yaml")); err != nil {
			return err
		}
		if err := m.waitTool(tool, false); err != nil {
			return err
		}
		time.Sleep(daemonDebounce + 100*time.Millisecond)
	}
	sortDurations(appears)
	sortDurations(inits)
	raw, init := percentile(appears, 0.50), percentile(inits, 0.50)
	res.set("tool_appears_raw_ms", raw)
	res.set("server_initialize_ms", init)
	res.set("tool_appears_ms", raw-init)
	fmt.Fprintf(cfg.log, "bench: %d samples, new file to list_changed p50 %.1f ms (max %.1f), the server's own start p50 %.1f ms (load %s)\n",
		len(appears), raw, percentile(appears, 1), init, procLoad())
	return nil
}

// untilListChangedBrings waits for list_changed notifications until one
// is followed by a list holding tool, and returns when that one arrived.
func (m *mcpDaemon) untilListChangedBrings(tool string) (time.Time, error) {
	ctx, cancel := context.WithTimeout(context.Background(), sampleDeadline)
	defer cancel()
	for {
		select {
		case at := <-m.changed:
			names, err := m.tools(ctx)
			if err != nil {
				return time.Time{}, err
			}
			if slices.Contains(names, tool) {
				return at, nil
			}
		case <-ctx.Done():
			return time.Time{}, fmt.Errorf("no list_changed bringing %s within %v", tool, sampleDeadline)
		}
	}
}

func drain(c chan time.Time) {
	for {
		select {
		case <-c:
		default:
			return
		}
	}
}

// procLoad is /proc/loadavg's three load averages.
func procLoad() string {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(data))
	return strings.Join(f[:min(3, len(f))], " ")
}
