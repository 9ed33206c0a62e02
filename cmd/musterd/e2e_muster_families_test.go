package main

// End-to-end tests of what muster's clients see of server families, of a
// stopped server's tools and of the discovery meta-tools: the real musterd
// binary, real bin/mcp-fake servers, muster's meta-tool view.

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// familySpec is the spec of an mcp-fake member of family, picking its
// instance by instanceArg.
func familySpec(family, instanceArg string, args ...string) []string {
	return append(stdioSpec(args...), "family: "+yamlValue(map[string]string{"name": family, "instanceArg": instanceArg}))
}

// musterTry calls tool through call_tool as musterCall does, but also
// takes muster's plain error of a call that could not be made (no
// envelope): its text, and true.
func musterTry(t *testing.T, cs *mcp.ClientSession, tool string, args map[string]any) (string, bool) {
	t.Helper()
	outer, outerErr := callTool(t, cs, "call_tool", map[string]any{"name": tool, "arguments": args})
	if strings.HasPrefix(outer, "Tool execution failed: ") {
		require.True(t, outerErr, outer)
		return outer, true
	}
	return musterCall(t, cs, tool, args)
}

// waitServiceState polls core_service_status until the server is in state
// (muster's lower-case spelling).
func waitServiceState(t *testing.T, call func(string, map[string]any) (string, bool), name, state string) {
	t.Helper()
	eventually(t, name+" is "+state, func() bool {
		out, _ := call("core_service_status", map[string]any{"name": name})
		return strings.Contains(out, `"state":"`+state+`"`)
	})
}

func TestE2EMusterFamiliesGroupFallBackAndRejectAsMusterDoes(t *testing.T) {
	e := startFS(t)
	// k8s: echo is described differently by its members (mc-b's is the
	// slow tool), get alike.
	e.write(t, "mcpservers/mc-a.yaml", mcpServerYAML("mc-a", familySpec("k8s", "cluster", "-tools", "echo,get")...))
	e.write(t, "mcpservers/mc-b.yaml", mcpServerYAML("mc-b", familySpec("k8s", "cluster", "-tools", "get", "-slow-tool", "echo")...))
	// batch: its instance argument is one the slow tool "work" takes itself.
	e.write(t, "mcpservers/b-1.yaml", mcpServerYAML("b-1", familySpec("batch", "steps", "-tools", "ping", "-slow-tool", "work")...))
	// db: its members disagree on the instance argument.
	e.write(t, "mcpservers/db-1.yaml", mcpServerYAML("db-1", familySpec("db", "cluster", "-tools", "query")...))
	e.write(t, "mcpservers/db-2.yaml", mcpServerYAML("db-2", familySpec("db", "instance", "-tools", "status")...))
	cs := e.mcpClient(t, "/mcp", "2024-11-05", nil)
	call := func(tool string, args map[string]any) (string, bool) { return musterTry(t, cs, tool, args) }
	for _, name := range []string{"mc-a", "mc-b", "b-1", "db-1", "db-2"} {
		waitServiceState(t, call, name, "running")
	}
	direct := e.directClient(t, nil)
	want := []string{
		"x_b-1_work", "x_batch_ping", "x_batch_work_cancelled", // work takes "steps": it alone falls back
		"x_db-1_query", "x_db-2_status", // the db family falls back entirely
		"x_k8s_echo_cancelled", "x_k8s_get", "x_mc-a_echo", "x_mc-b_echo", // echo diverges: it alone falls back
	}
	var names []string
	defer func() {
		if t.Failed() {
			t.Logf("names listed last: %q", names)
		}
	}()
	eventually(t, "muster's names", func() bool {
		names = slices.DeleteFunc(toolNames(t, direct), func(n string) bool { return !strings.HasPrefix(n, "x_") })
		return slices.Equal(names, want)
	})

	out, isErr := call("x_k8s_get", map[string]any{"cluster": "mc-b", "n": 1})
	require.False(t, isErr, out)
	assert.Equal(t, `get {"n":1}`, out, "routed, the instance argument removed")
	out, isErr = call("x_mc-a_echo", map[string]any{"n": 2})
	require.False(t, isErr, out)
	assert.Equal(t, `echo {"n":2}`, out, "a fallen-back tool takes no instance argument")
	out, isErr = call("x_db-1_query", nil)
	require.False(t, isErr, out)

	for tool, args := range map[string]map[string]any{
		"x_k8s_echo": {"cluster": "mc-a"}, "x_db_query": {"cluster": "db-1"}, "x_batch_work": {"steps": "b-1"},
	} {
		out, isErr = call(tool, args)
		assert.True(t, isErr, tool)
		assert.Contains(t, out, "tool not found", "%s is not exposed: muster's words", tool)
	}

	out, isErr = call("x_k8s_get", map[string]any{"n": 1})
	assert.True(t, isErr)
	assert.Contains(t, out, `tool x_k8s_get is provided by a family on servers mc-a, mc-b; the "cluster" parameter is required`)
	out, isErr = call("x_k8s_get", map[string]any{"cluster": "mc-typo"})
	assert.True(t, isErr)
	assert.Contains(t, out, `tool x_k8s_get is not available on server "mc-typo" (available: mc-a, mc-b)`)

	// A member stopped: rejected by name, the others still routed; its own
	// fallen-back tool says its server is not running.
	out, isErr = call("core_service_stop", map[string]any{"name": "mc-b"})
	require.False(t, isErr, out)
	waitServiceState(t, call, "mc-b", "stopped")
	out, isErr = call("x_k8s_get", map[string]any{"cluster": "mc-b"})
	assert.True(t, isErr)
	assert.Contains(t, out, `tool x_k8s_get is not available on server "mc-b" (available: mc-a)`)
	out, isErr = call("x_k8s_get", map[string]any{"cluster": "mc-a"})
	assert.False(t, isErr, out)
	out, isErr = call("x_mc-b_echo", nil)
	assert.True(t, isErr)
	assert.Contains(t, out, "server not found: mc-b")
	eventually(t, "echo groups again, its divergence gone with mc-b", func() bool {
		return hasTool(t, direct, "x_k8s_echo") && !hasTool(t, direct, "x_mc-a_echo")
	})

	// The other dissenting db member stopped: the family groups again.
	out, isErr = call("core_service_stop", map[string]any{"name": "db-2"})
	require.False(t, isErr, out)
	eventually(t, "db groups again", func() bool { return hasTool(t, direct, "x_db_query") })
	out, isErr = call("x_db_query", map[string]any{"cluster": "db-1"})
	assert.False(t, isErr, out)
}

func TestE2EAStoppedServersToolSaysItsServerIsNotRunning(t *testing.T) {
	e := startFS(t)
	e.write(t, "mcpservers/fake.yaml", mcpServerYAML("fake", stdioSpec("-tools", "echo")...))
	cs := e.mcpClient(t, "/mcp", "2024-11-05", nil)
	call := func(tool string, args map[string]any) (string, bool) { return musterTry(t, cs, tool, args) }
	waitServiceState(t, call, "fake", "running")
	out, isErr := call("x_fake_echo", map[string]any{"a": 1})
	require.False(t, isErr, out)

	out, isErr = call("core_service_stop", map[string]any{"name": "fake"})
	require.False(t, isErr, out)
	waitServiceState(t, call, "fake", "stopped")
	out, isErr = call("x_fake_echo", map[string]any{"a": 1})
	assert.True(t, isErr)
	assert.Contains(t, out, "server not found: fake", "muster's words")
	assert.Contains(t, out, "is not running (state Stopped)", "and the server's state")
	direct := e.directClient(t, nil)
	assert.False(t, hasTool(t, direct, "x_fake_echo"), "not listed while stopped")
	res, err := direct.CallTool(callCtx(t), &mcp.CallToolParams{Name: "x_fake_echo", Arguments: map[string]any{}})
	if err == nil {
		require.True(t, res.IsError, "a direct call fails too")
		require.NotEmpty(t, res.Content)
		tc, _ := res.Content[0].(*mcp.TextContent)
		require.NotNil(t, tc)
		assert.Contains(t, tc.Text, "server not found: fake")
	} else {
		assert.Contains(t, err.Error(), "server not found: fake")
	}

	out, isErr = call("x_nobody_home", nil)
	assert.True(t, isErr)
	assert.Contains(t, out, `unknown tool "x_nobody_home": tool not found`, "a tool nobody offered is still unknown")

	out, isErr = call("core_service_start", map[string]any{"name": "fake"})
	require.False(t, isErr, out)
	waitServiceState(t, call, "fake", "running")
	out, isErr = call("x_fake_echo", map[string]any{"a": 2})
	require.False(t, isErr, out)
	assert.Equal(t, `echo {"a":2}`, out)
}

func TestE2EDiscoveryLabelsFacetAndCoreToolsInFull(t *testing.T) {
	e := startFS(t)
	e.write(t, "mcpservers/lbl.yaml", mcpServerYAML("lbl", stdioSpec("-tools", "noop")...))
	labelled := func(name string, labels string) string {
		return strings.Replace(workflowYAML(name, "x_lbl_noop"), "metadata:\n", "metadata:\n  labels: "+labels+"\n", 1)
	}
	e.write(t, "workflows/wf-alpha.yaml", labelled("wf-alpha", `{category: observability}`))
	e.write(t, "workflows/wf-beta.yaml", labelled("wf-beta", `{category: observability, env: prod}`))
	e.write(t, "workflows/wf-gamma.yaml", labelled("wf-gamma", `{category: delivery}`))
	cs := e.mcpClient(t, "/mcp", "2024-11-05", nil)
	direct := e.directClient(t, nil)
	eventually(t, "the workflows' tools", func() bool {
		names := toolNames(t, direct)
		return slices.Contains(names, "workflow_wf-alpha") && slices.Contains(names, "workflow_wf-beta") && slices.Contains(names, "workflow_wf-gamma")
	})

	type page struct {
		Total int
		Tools []struct {
			Name   string
			Labels map[string]string
		}
	}
	filter := func(labels map[string]any) page {
		t.Helper()
		out, isErr := callTool(t, cs, "filter_tools", map[string]any{"labels": labels, "limit": 50})
		require.False(t, isErr, out)
		var p page
		require.NoError(t, json.Unmarshal([]byte(out), &p), out)
		return p
	}
	p := filter(map[string]any{"category": "observability"})
	assert.Equal(t, 2, p.Total)
	require.Len(t, p.Tools, 2)
	assert.Equal(t, "workflow_wf-alpha", p.Tools[0].Name)
	assert.Equal(t, "workflow_wf-beta", p.Tools[1].Name)
	p = filter(map[string]any{"category": "observability", "env": "prod"})
	require.Equal(t, 1, p.Total, "every label must match")
	assert.Equal(t, "workflow_wf-beta", p.Tools[0].Name)
	assert.Equal(t, map[string]string{"category": "observability", "env": "prod"}, p.Tools[0].Labels, "the labels surfaced")
	p = filter(map[string]any{"category": "delivery"})
	require.Equal(t, 1, p.Total)
	assert.Equal(t, "workflow_wf-gamma", p.Tools[0].Name)

	out, isErr := callTool(t, cs, "list_core_tools", nil)
	require.False(t, isErr, out)
	assert.Contains(t, out, `"core_workflow_list"`)
	assert.Contains(t, out, `"inputSchema"`)
	assert.NotContains(t, out, "workflow_wf-alpha", "core tools only")
	var core struct {
		Truncated *bool
		Tools     []struct{ Name string }
	}
	require.NoError(t, json.Unmarshal([]byte(out), &core), out)
	require.NotNil(t, core.Truncated)
	assert.False(t, *core.Truncated, "no cap")
	out, isErr = callTool(t, cs, "list_core_tools", map[string]any{"include_schema": false})
	require.False(t, isErr, out)
	assert.NotContains(t, out, "inputSchema")
}

func TestE2EADefinitionThatDoesNotDecodeIsDeletedAllTheSame(t *testing.T) {
	e := startFS(t)
	cs := e.mcpClient(t, "/mcp", "2024-11-05", nil)
	// A workflow file that does not decode (a field musterd does not know,
	// as muster's harness writes) is deleted all the same.
	bad := strings.Replace(workflowYAML("lct-sample", "core_service_list"), "spec:\n", "spec:\n  notAField: {type: object}\n", 1)
	e.write(t, "workflows/lct-sample.yaml", bad)
	eventually(t, "the invalid workflow is known", func() bool {
		out, _ := musterCall(t, cs, "core_workflow_list", nil)
		return strings.Contains(out, "lct-sample")
	})
	out, isErr := musterCall(t, cs, "core_workflow_delete", map[string]any{"name": "lct-sample"})
	require.False(t, isErr, out)
	_, err := os.Stat(filepath.Join(e.config, "workflows", "lct-sample.yaml"))
	assert.ErrorIs(t, err, os.ErrNotExist, "its file is gone")
}
