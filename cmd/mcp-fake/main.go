// Command mcp-fake is a small MCP server for tests, built with the official
// go-sdk. Its flags pick its tools and how it misbehaves: crash after a
// while, exit at once, hang on initialize, start slowly, ignore SIGTERM, or
// print a secret to stderr. It speaks stdio by default and streamable HTTP
// (at /mcp) and SSE (at /sse) with -http.
//
// Every line it writes to stderr starts with "mcp-fake:", so a test can
// recognise it in a captured stderr tail.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Exit codes, distinct so that a test can tell which failure it saw.
const (
	exitCrash       = 1
	exitUsage       = 2
	exitAtOnce      = 3
	exitServeFailed = 4
)

type config struct {
	tools            []string
	crashAfter       time.Duration
	exitAtOnce       bool
	hangOnInitialize bool
	slowStart        time.Duration
	httpAddr         string
	stderrSecret     string
	stderrEnv        string
	ignoreSIGTERM    bool
	addToolAfter     time.Duration
	slowTool         string
	protocols        []string
	requireBearer    string
}

func main() {
	cfg, err := parseFlags(os.Args[1:])
	if err != nil {
		fmt.Fprintln(os.Stderr, "mcp-fake:", err)
		os.Exit(exitUsage)
	}
	os.Exit(run(cfg))
}

func parseFlags(args []string) (config, error) {
	var cfg config
	fs := flag.NewFlagSet("mcp-fake", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	tools := fs.String("tools", "echo", "comma-separated tool names; each echoes its arguments as text")
	fs.DurationVar(&cfg.crashAfter, "crash-after", 0, "exit 1 after this long, saying so on stderr first")
	fs.BoolVar(&cfg.exitAtOnce, "exit-at-once", false, "exit 3 at once, after a line on stderr")
	fs.BoolVar(&cfg.hangOnInitialize, "hang-on-initialize", false, "read stdin but never answer")
	fs.DurationVar(&cfg.slowStart, "slow-start", 0, "sleep this long before serving")
	fs.StringVar(&cfg.httpAddr, "http", "", "serve streamable HTTP at /mcp and SSE at /sse on this address instead of stdio, printing the URL to stdout")
	fs.StringVar(&cfg.stderrSecret, "stderr-secret", "", "write password=TOKEN to stderr at start")
	fs.StringVar(&cfg.stderrEnv, "stderr-env", "", "write the value of this environment variable to stderr at start")
	fs.BoolVar(&cfg.ignoreSIGTERM, "ignore-sigterm", false, "ignore SIGTERM and SIGPIPE, and keep running after stdin closes")
	fs.DurationVar(&cfg.addToolAfter, "add-tool-after", 0, `add a tool named "late" after this long, notifying clients that the tool list changed`)
	supervision.register(fs)
	oidcGuard.register(fs)
	bearerUsers.register(fs) // users.go
	fs.StringVar(&cfg.slowTool, "slow-tool", "", `add a tool of this name that works for "steps" (default 10) times "interval" (default "100ms"), `+
		`reporting progress after each step, and a tool NAME_cancelled that says how many of its calls were cancelled`)
	fs.StringVar(&cfg.requireBearer, "require-bearer", "", "with -http: answer 401 with an RFC 9728 challenge to a request without this bearer token; GET /refusals counts them")
	protocols := fs.String("protocols", "", `comma-separated protocol versions to offer, e.g. "2025-11-25" for a server of the older generation that asks its client classic requests; default: every one the go-sdk speaks`)
	if err := fs.Parse(args); err != nil {
		return config{}, err
	}
	if fs.NArg() > 0 {
		return config{}, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	for name := range strings.SplitSeq(*tools, ",") {
		if name = strings.TrimSpace(name); name != "" {
			cfg.tools = append(cfg.tools, name)
		}
	}
	for v := range strings.SplitSeq(*protocols, ",") {
		if v = strings.TrimSpace(v); v != "" {
			cfg.protocols = append(cfg.protocols, v)
		}
	}
	return cfg, nil
}

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "mcp-fake: "+format+"\n", args...)
}

func run(cfg config) int {
	logf("starting, pid %d, tools %s", os.Getpid(), strings.Join(cfg.tools, ","))
	if cfg.stderrSecret != "" {
		logf("password=%s", cfg.stderrSecret)
	}
	if cfg.stderrEnv != "" {
		logf("%s", os.Getenv(cfg.stderrEnv))
	}
	if code := supervision.apply(); code != 0 {
		return code
	}
	if cfg.exitAtOnce {
		logf("exiting at once as asked, exit code %d", exitAtOnce)
		return exitAtOnce
	}
	if cfg.ignoreSIGTERM {
		// SIGPIPE too: a stubborn server outlives its client closing the
		// pipes, so that only SIGKILL ends it.
		signal.Ignore(syscall.SIGTERM, syscall.SIGPIPE)
	}
	if cfg.crashAfter > 0 {
		time.AfterFunc(cfg.crashAfter, func() {
			logf("crashing after %s as asked, exit code %d", cfg.crashAfter, exitCrash)
			os.Exit(exitCrash)
		})
	}
	if cfg.slowStart > 0 {
		logf("starting slowly: sleeping %s", cfg.slowStart)
		time.Sleep(cfg.slowStart)
	}

	server := newServer(cfg.tools, cfg.protocols)
	supervision.instrument(server)
	if cfg.slowTool != "" {
		addSlowTool(server, cfg.slowTool)
	}
	if cfg.addToolAfter > 0 {
		time.AfterFunc(cfg.addToolAfter, func() { addEchoTool(server, lateTool) })
	}
	var err error
	switch {
	case cfg.hangOnInitialize:
		logf("hanging on initialize as asked")
		_, _ = io.Copy(io.Discard, os.Stdin)
		hang()
	case cfg.httpAddr != "":
		err = serveHTTP(cfg.httpAddr, server, bearerVerifier(cfg.requireBearer))
	default:
		err = server.Run(context.Background(), &mcp.StdioTransport{})
	}
	if cfg.ignoreSIGTERM {
		logf("done serving (%v); staying up as asked", err)
		hang()
	}
	if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, context.Canceled) {
		logf("serving failed: %v", err)
		return exitServeFailed
	}
	return 0
}

// hang blocks forever. A sleeping timer, unlike an empty select, keeps the
// runtime from calling it a deadlock.
func hang() {
	for {
		time.Sleep(time.Hour)
	}
}

// lateTool is the tool that -add-tool-after adds.
const lateTool = "late"

func newServer(tools, protocols []string) *mcp.Server {
	opts := &mcp.ServerOptions{SupportedProtocolVersions: protocols}
	countRootsChanges(opts) // asking.go
	server := mcp.NewServer(&mcp.Implementation{Name: "mcp-fake", Version: "v1"}, opts)
	serving = server // users.go's add_tool adds to it
	for _, name := range tools {
		addEchoTool(server, name)
	}
	return server
}

func addEchoTool(server *mcp.Server, name string) {
	handler, desc := mcp.ToolHandler(echo), "echoes its arguments as text"
	if special, ok := specialTools[name]; ok { // tools.go
		handler, desc = special, "a test tool: see mcp-fake's tools.go"
	}
	server.AddTool(&mcp.Tool{
		Name:        name,
		Description: desc,
		InputSchema: json.RawMessage(`{"type":"object"}`),
	}, handler)
}

func echo(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	args := string(req.Params.Arguments)
	if args == "" {
		args = "{}"
	}
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: req.Params.Name + " " + args}}}, nil
}

func serveHTTP(addr string, server *mcp.Server, bearer auth.TokenVerifier) error {
	listener, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	getServer := func(*http.Request) *mcp.Server { return server }
	mux := http.NewServeMux()
	guard := func(h http.Handler) http.Handler { return h }
	switch {
	case bearer != nil:
		guard = requireBearer(mux, "http://"+listener.Addr().String(), bearer)
	case oidcGuard.issuer != "":
		if guard, err = oidcGuard.guard(mux, "http://"+listener.Addr().String()); err != nil {
			return err
		}
	}
	mux.Handle("/mcp", guard(mcp.NewStreamableHTTPHandler(getServer, nil)))
	mux.Handle("/sse", guard(mcp.NewSSEHandler(getServer, nil)))
	fmt.Printf("listening on http://%s/mcp\n", listener.Addr())

	// SIGTERM keeps its default action, ending the process, unless
	// -ignore-sigterm said otherwise.
	return (&http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}).Serve(listener)
}

// addSlowTool adds the tool name, which takes its time, reports progress
// and counts the calls its client cancelled, and name_cancelled, which
// answers that count, so that a test can see a cancellation arrive.
func addSlowTool(server *mcp.Server, name string) {
	var cancelled atomic.Int64
	server.AddTool(&mcp.Tool{
		Name:        name,
		Description: `works for "steps" times "interval", reporting progress after each step`,
		InputSchema: json.RawMessage(`{"type":"object","properties":{"steps":{"type":"integer"},"interval":{"type":"string"}}}`),
	}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		var args struct {
			Steps    int    `json:"steps"`
			Interval string `json:"interval"`
		}
		if len(req.Params.Arguments) > 0 {
			if err := json.Unmarshal(req.Params.Arguments, &args); err != nil {
				return nil, err
			}
		}
		interval := 100 * time.Millisecond
		if args.Interval != "" {
			d, err := time.ParseDuration(args.Interval)
			if err != nil {
				return nil, err
			}
			interval = d
		}
		if args.Steps <= 0 {
			args.Steps = 10
		}
		token := req.Params.GetProgressToken()
		for step := 1; step <= args.Steps; step++ {
			select {
			case <-ctx.Done():
				n := cancelled.Add(1)
				logf("%s: call cancelled after %d of %d steps (%d cancelled so far)", name, step-1, args.Steps, n)
				return nil, ctx.Err()
			case <-time.After(interval):
			}
			if token != nil {
				_ = req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{
					ProgressToken: token, Progress: float64(step), Total: float64(args.Steps),
					Message: fmt.Sprintf("step %d of %d", step, args.Steps),
				})
			}
		}
		return &mcp.CallToolResult{
			Content:           []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf("%s done after %d steps, pid %d", name, args.Steps, os.Getpid())}},
			StructuredContent: map[string]any{"steps": args.Steps, "pid": os.Getpid()},
		}, nil
	})
	server.AddTool(&mcp.Tool{
		Name:        name + "_cancelled",
		Description: "says how many calls of " + name + " were cancelled",
		InputSchema: json.RawMessage(`{"type":"object"}`),
	}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: strconv.FormatInt(cancelled.Load(), 10)}}}, nil
	})
}
