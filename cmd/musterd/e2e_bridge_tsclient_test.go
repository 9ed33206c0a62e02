package main

// A server's input requests (MCP 2026-07-28's InputRequiredResult) reach a
// client of 2025-11-25 that nobody here wrote, as the classic requests it
// knows: the TypeScript SDK's client (npm's @modelcontextprotocol/sdk,
// pinned by `make npm-clients`, driven by testdata/tsclient.mjs) calls the
// go-sdk's conformance server, managed by the real musterd over stdio,
// through /mcp/servers/<name> and /mcp/direct, and answers elicitation,
// sampling and roots/list itself.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/musterd/musterd/internal/conformancetest"
	"github.com/musterd/musterd/internal/npmtest"
	"github.com/musterd/musterd/pkg/supervisor"
)

// tsCall is what testdata/tsclient.mjs printed for one tool call.
type tsCall struct {
	Tool    string
	Text    string
	IsError bool
	Error   bool     // the call failed as a request, not with a result
	Asked   []string // the methods of the requests the client was sent during the call
}

// tsClient runs the TypeScript SDK's client against url as name, calling
// tools in order, and returns the protocol version it agreed and its calls
// by tool. A run is bounded, so that a hang fails the test.
func tsClient(t *testing.T, sdk, url, name string, tools ...string) (string, map[string]tsCall) {
	t.Helper()
	script, err := filepath.Abs(filepath.Join("testdata", "tsclient.mjs"))
	require.NoError(t, err)
	node, err := exec.LookPath("node") // npmtest found the SDK: node is there
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), e2eDeadline)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, append([]string{script, sdk, url, name}, tools...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err = cmd.Run()
	require.NoError(t, ctx.Err(), "the TypeScript client did not finish\nstdout:\n%s\nstderr:\n%s", stdout.String(), stderr.String())
	require.NoError(t, err, "the TypeScript client failed\nstdout:\n%s\nstderr:\n%s", stdout.String(), stderr.String())

	var version string
	calls := map[string]tsCall{}
	sc := bufio.NewScanner(&stdout)
	for first := true; sc.Scan(); first = false {
		if first {
			var hello struct{ ProtocolVersion string }
			require.NoError(t, json.Unmarshal(sc.Bytes(), &hello), sc.Text())
			version = hello.ProtocolVersion
			continue
		}
		var c tsCall
		require.NoError(t, json.Unmarshal(sc.Bytes(), &c), sc.Text())
		calls[c.Tool] = c
	}
	require.Len(t, calls, len(tools), "one line per call\n%s", stdout.String())
	return version, calls
}

func TestE2EInputRequestsReachTheTypeScriptClientAsClassicRequests(t *testing.T) {
	sdk := npmtest.TypeScriptSDK(t)
	bin := conformancetest.BuildEverythingServer(t)
	e := startFS(t)
	e.write(t, "mcpservers/tsb.yaml", annotatedServerYAML("tsb",
		map[string]string{supervisor.ClientSessionsAnnotation: string(supervisor.ClientSessionsPerClient)},
		"type: stdio", "autoStart: true", "command: "+yamlValue(bin), "timeout: 20"))
	e.write(t, "mcpservers/tsshared.yaml", annotatedServerYAML("tsshared",
		map[string]string{supervisor.ClientSessionsAnnotation: string(supervisor.ClientSessionsShared)},
		"type: stdio", "autoStart: true", "command: "+yamlValue(bin), "timeout: 20"))
	for _, name := range []string{"tsb", "tsshared"} {
		s := e.waitServer(t, name, "running", func(s serverObject) bool { return s.Status.State == "Running" })
		require.Equal(t, "2026-07-28", s.Status.ProtocolVersion,
			"%s's shared session speaks the newest generation: its answers to musterd are input-required results", name)
	}

	const prefix = "test_input_required_result_"
	want := map[string]struct {
		text  string
		asked []string
	}{
		"elicitation":     {"Hello, alice!", []string{"elicitation/create"}},
		"sampling":        {"Sampling response: from alice", []string{"sampling/createMessage"}},
		"list_roots":      {"Client exposed 1 root(s): file:///alice", []string{"roots/list"}},
		"multiple_inputs": {"from alice alice — 1 root(s) visible", []string{"elicitation/create", "sampling/createMessage", "roots/list"}},
		"multi_round":     {"Multi-round complete: alice likes green", []string{"elicitation/create", "elicitation/create"}},
	}
	for view, toolPrefix := range map[string]string{"/mcp/servers/tsb": "", "/mcp/direct": "x_tsb_"} {
		t.Run(view, func(t *testing.T) {
			var tools []string
			for tool := range want {
				tools = append(tools, toolPrefix+prefix+tool)
			}
			version, calls := tsClient(t, sdk, "http://"+e.addr+view, "alice", tools...)
			assert.Equal(t, "2025-11-25", version, "the TypeScript client is of the older generation")
			for tool, w := range want {
				got := calls[toolPrefix+prefix+tool]
				assert.False(t, got.IsError, "%s: %s", tool, got.Text)
				assert.Equal(t, w.text, got.Text, tool)
				assert.ElementsMatch(t, w.asked, got.Asked, "%s: the client's own handlers were asked", tool)
			}
		})
	}

	// Shared by every client, the server has no session to ask this one
	// on: the call fails, saying why, and the client is asked nothing. So
	// the answers above came through the client's own session.
	t.Run("shared", func(t *testing.T) {
		tool := prefix + "elicitation"
		_, calls := tsClient(t, sdk, "http://"+e.addr+"/mcp/servers/tsshared", "bob", tool)
		got := calls[tool]
		assert.True(t, got.IsError, got.Text)
		assert.Contains(t, got.Text, "elicitation/create refused")
		assert.Contains(t, got.Text, "shared by all of musterd's clients", got.Text)
		assert.Empty(t, got.Asked)
	})
}
