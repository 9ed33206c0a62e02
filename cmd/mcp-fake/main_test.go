package main

import (
	"bufio"
	"context"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestMain lets the test binary be mcp-fake itself: run with
// MCP_FAKE_AS_MAIN=1 it serves instead of testing, so the tests drive a
// real process without a separate build.
func TestMain(m *testing.M) {
	if os.Getenv("MCP_FAKE_AS_MAIN") == "1" {
		main()
	}
	os.Exit(m.Run())
}

func fakeCommand(ctx context.Context, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, os.Args[0], args...)
	cmd.Env = append(os.Environ(), "MCP_FAKE_AS_MAIN=1")
	return cmd
}

func connect(t *testing.T, transport mcp.Transport) *mcp.ClientSession {
	t.Helper()
	// Not a context that ends before the session: SSE ties its stream to it.
	session, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "v1"}, nil).Connect(t.Context(), transport, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = session.Close() })
	return session
}

func toolNames(t *testing.T, session *mcp.ClientSession) []string {
	t.Helper()
	res, err := session.ListTools(t.Context(), nil)
	require.NoError(t, err)
	var names []string
	for _, tool := range res.Tools {
		names = append(names, tool.Name)
	}
	return names
}

func TestStdioServesTheNamedToolsWhichEchoTheirArguments(t *testing.T) {
	session := connect(t, &mcp.CommandTransport{Command: fakeCommand(t.Context(), "-tools", "echo,add")})
	assert.ElementsMatch(t, []string{"echo", "add"}, toolNames(t, session))

	res, err := session.CallTool(t.Context(), &mcp.CallToolParams{Name: "add", Arguments: map[string]any{"a": 1}})
	require.NoError(t, err)
	require.Len(t, res.Content, 1)
	assert.Equal(t, `add {"a":1}`, res.Content[0].(*mcp.TextContent).Text)
}

func TestAddToolAfterNotifiesTheClient(t *testing.T) {
	changed := make(chan struct{}, 1)
	client := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "v1"}, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
			select {
			case changed <- struct{}{}:
			default:
			}
		},
	})
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	session, err := client.Connect(ctx, &mcp.CommandTransport{Command: fakeCommand(t.Context(), "-add-tool-after", "200ms")}, nil)
	require.NoError(t, err)
	defer session.Close()
	select {
	case <-changed:
	case <-ctx.Done():
		t.Fatal("no tools/list_changed notification")
	}
	assert.ElementsMatch(t, []string{"echo", lateTool}, toolNames(t, session))
}

// serveOverHTTP runs the fake with -http and args until t ends, and returns
// the streamable-http URL it says it listens on.
func serveOverHTTP(t *testing.T, args ...string) string {
	t.Helper()
	cmd := fakeCommand(t.Context(), append([]string{"-http", "127.0.0.1:0"}, args...)...)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	line, err := bufio.NewReader(stdout).ReadString('\n')
	require.NoError(t, err)
	url, ok := strings.CutPrefix(strings.TrimSpace(line), "listening on ")
	require.True(t, ok, "first line: %q", line)
	return url
}

func TestHTTPServesStreamableHTTPAndSSE(t *testing.T) {
	url := serveOverHTTP(t, "-tools", "remote")
	require.True(t, strings.HasSuffix(url, "/mcp"), url)

	streamable := connect(t, &mcp.StreamableClientTransport{Endpoint: url})
	assert.Equal(t, []string{"remote"}, toolNames(t, streamable))
	sse := connect(t, &mcp.SSEClientTransport{Endpoint: strings.TrimSuffix(url, "/mcp") + "/sse"})
	assert.Equal(t, []string{"remote"}, toolNames(t, sse))
}

func TestFailureModesExitWithTheirCodeAndSaySoOnStderr(t *testing.T) {
	tests := []struct {
		name     string
		args     []string
		code     int
		stderr   []string
		deadline time.Duration
	}{
		{name: "exit at once", args: []string{"-exit-at-once", "-stderr-secret", "tok"}, code: exitAtOnce,
			stderr: []string{"mcp-fake: password=tok", "mcp-fake: exiting at once as asked, exit code 3"}},
		{name: "crash after", args: []string{"-crash-after", "100ms"}, code: exitCrash,
			stderr: []string{"mcp-fake: crashing after 100ms as asked, exit code 1"}},
		{name: "env to stderr", args: []string{"-stderr-env", "FAKE_TEST_VALUE", "-exit-at-once"}, code: exitAtOnce,
			stderr: []string{"mcp-fake: from-the-env"}},
		{name: "bad flag", args: []string{"-no-such-flag"}, code: exitUsage},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
			defer cancel()
			cmd := fakeCommand(ctx, tt.args...)
			cmd.Env = append(cmd.Env, "FAKE_TEST_VALUE=from-the-env")
			stdin, err := cmd.StdinPipe() // kept open: the server must exit by itself
			require.NoError(t, err)
			defer stdin.Close()
			var stderr strings.Builder
			cmd.Stderr = &stderr
			err = cmd.Run()
			var exitErr *exec.ExitError
			require.True(t, errors.As(err, &exitErr), "err %v", err)
			assert.Equal(t, tt.code, exitErr.ExitCode())
			for _, want := range tt.stderr {
				assert.Contains(t, stderr.String(), want)
			}
		})
	}
}

func TestHangOnInitializeNeverAnswers(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 500*time.Millisecond)
	defer cancel()
	cmd := fakeCommand(t.Context(), "-hang-on-initialize")
	_, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "v1"}, nil).Connect(ctx, &mcp.CommandTransport{Command: cmd, TerminateDuration: 100 * time.Millisecond}, nil)
	require.Error(t, err)
	assert.ErrorIs(t, err, context.DeadlineExceeded)
}

func TestParseFlags(t *testing.T) {
	cfg, err := parseFlags([]string{"-tools", " a, b,,c ", "-slow-start", "1s", "-ignore-sigterm"})
	require.NoError(t, err)
	assert.Equal(t, []string{"a", "b", "c"}, cfg.tools)
	assert.Equal(t, time.Second, cfg.slowStart)
	assert.True(t, cfg.ignoreSIGTERM)

	_, err = parseFlags([]string{"extra"})
	assert.ErrorContains(t, err, `unexpected arguments ["extra"]`)
}

// A gate holds a call until the test opens it; gate_waiting tells the
// test the call is there; a cancelled call at a gate ends.
func TestAGateHoldsACallUntilOpened(t *testing.T) {
	session := connect(t, &mcp.CommandTransport{Command: fakeCommand(t.Context(), "-tools", "gate,gate_waiting,gate_open")})
	call := func(ctx context.Context, tool, name string) (string, error) {
		res, err := session.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: map[string]any{"name": name}})
		if err != nil {
			return "", err
		}
		if res.IsError {
			return "", errors.New(res.Content[0].(*mcp.TextContent).Text)
		}
		return res.Content[0].(*mcp.TextContent).Text, nil
	}
	held := make(chan string, 1)
	go func() { text, _ := call(t.Context(), "gate", "g"); held <- text }()
	got, err := call(t.Context(), "gate_waiting", "g")
	require.NoError(t, err)
	assert.Equal(t, `{"waiting":"g"}`, got)
	select {
	case text := <-held:
		t.Fatalf("the call passed a closed gate: %s", text)
	default:
	}
	got, err = call(t.Context(), "gate_open", "g")
	require.NoError(t, err)
	assert.Equal(t, `{"opened":"g"}`, got)
	assert.Equal(t, `{"gate":"g"}`, <-held)
	got, err = call(t.Context(), "gate", "g")
	require.NoError(t, err)
	assert.Equal(t, `{"gate":"g"}`, got, "an open gate stays open")

	ctx, cancel := context.WithCancel(t.Context())
	cancelled := make(chan error, 1)
	go func() { _, err := call(ctx, "gate", "h"); cancelled <- err }()
	_, err = call(t.Context(), "gate_waiting", "h")
	require.NoError(t, err)
	cancel()
	assert.ErrorIs(t, <-cancelled, context.Canceled)

	_, err = call(t.Context(), "gate", "")
	assert.ErrorContains(t, err, `gate: the argument "name" (a string) is required`)
}
