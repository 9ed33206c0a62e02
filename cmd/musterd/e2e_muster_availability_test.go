package main

// End-to-end test of what muster's clients are told of a workflow's
// availability: the real musterd binary, real bin/mcp-fake servers, the
// workflows calling each other three levels deep as muster's scenarios do.

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestE2EMusterWorkflowAvailabilityFollowsNestedWorkflowsAtAnyDepth(t *testing.T) {
	e := startFS(t)
	e.write(t, "mcpservers/echo-provider.yaml", mcpServerYAML("echo-provider", stdioSpec("-tools", "echo")...))
	// Two members of one family, each offering the tool: one family tool.
	for _, mc := range []string{"mc1-mcp-prometheus", "mc2-mcp-prometheus"} {
		e.write(t, "mcpservers/"+mc+".yaml", mcpServerYAML(mc, familySpec("prometheus", "management_cluster", "-tools", "execute_query")...))
	}
	for name, tool := range map[string]string{
		// top → mid → deep → a tool echo-provider offers.
		"deep": "x_echo-provider_echo", "mid": "workflow_deep", "top": "workflow_mid",
		// btop → bmid → bdeep → a tool of a server never declared.
		"bdeep": "x_absent-server_do_something", "bmid": "workflow_bdeep", "btop": "workflow_bmid",
		// otop → omid → odeep, not declared (yet).
		"omid": "workflow_odeep", "otop": "workflow_omid",
		// A cycle: it ends, and is never available.
		"ping": "workflow_pong", "pong": "workflow_ping",
		"runbook": "x_prometheus_execute_query",
	} {
		e.write(t, "workflows/"+name+".yaml", workflowYAML(name, tool))
	}
	cs := e.mcpClient(t, "/mcp", "2024-11-05", nil)
	call := func(tool string, args map[string]any) (string, bool) { return musterTry(t, cs, tool, args) }
	for _, name := range []string{"echo-provider", "mc1-mcp-prometheus", "mc2-mcp-prometheus"} {
		waitServiceState(t, call, name, "running")
	}
	eventually(t, "every workflow declared", func() bool {
		out, _ := call("core_workflow_list", nil)
		var list struct{ Workflows []struct{ Name string } }
		return json.Unmarshal([]byte(out), &list) == nil && len(list.Workflows) == 11
	})
	available := func(name string) bool {
		t.Helper()
		out, isErr := call("core_workflow_available", map[string]any{"name": name})
		require.False(t, isErr, out)
		var got struct {
			Name      string
			Available bool
		}
		require.NoError(t, json.Unmarshal([]byte(out), &got), out)
		require.Equal(t, name, got.Name, out)
		return got.Available
	}
	missing := func(name string) []string {
		t.Helper()
		out, isErr := call("core_workflow_get", map[string]any{"name": name})
		require.False(t, isErr, out)
		var got struct {
			Workflow struct {
				Available    bool
				MissingTools []string
			}
		}
		require.NoError(t, json.Unmarshal([]byte(out), &got), out)
		return got.Workflow.MissingTools
	}

	// Judged at the call: once a server is running its tools are offered,
	// so no waiting here for the pipeline.
	for name, want := range map[string]bool{
		"deep": true, "mid": true, "top": true, "runbook": true,
		"bdeep": false, "bmid": false, "btop": false,
		"omid": false, "otop": false,
		"ping": false, "pong": false,
	} {
		assert.Equal(t, want, available(name), "%s available", name)
	}
	assert.Equal(t, []string{"x_absent-server_do_something"}, missing("btop"), "the tool missing three levels down")
	assert.Equal(t, []string{"workflow_odeep"}, missing("otop"), "the workflow missing two levels down")
	assert.Empty(t, missing("top"))

	// The reconciler's verdict, through the pipeline, says the same, once
	// every workflow of the chains is read: btop, read before bmid, is
	// first found missing workflow_bmid, and validated again when bmid
	// comes.
	direct := e.directClient(t, nil)
	wantErrors := []string{"step only (through bmid → bdeep): tool x_absent-server_do_something is not offered by any running server"}
	eventually(t, "the verdicts of the chains", func() bool {
		top, _ := e.resource(t, "workflows", "top")
		btop, _ := e.resource(t, "workflows", "btop")
		return top.Status.Valid && !btop.Status.Valid && slices.Equal(btop.Status.ValidationErrors, wantErrors) &&
			hasTool(t, direct, "workflow_top")
	})
	btop, _ := e.resource(t, "workflows", "btop")
	assert.Equal(t, []string{"x_absent-server_do_something"}, btop.Status.MissingTools)
	assert.False(t, hasTool(t, direct, "workflow_btop"), "a workflow that cannot run is no tool")
	assert.False(t, hasTool(t, direct, "workflow_otop"))

	// The workflow missing at the bottom declared: the chain above it is
	// validated again through the pipeline, to the top.
	e.write(t, "workflows/odeep.yaml", workflowYAML("odeep", "x_echo-provider_echo"))
	eventually(t, "otop available, its verdict valid, its tool listed", func() bool {
		otop, _ := e.resource(t, "workflows", "otop")
		return available("otop") && otop.Status.Valid && hasTool(t, direct, "workflow_otop")
	})

	// The tool at the bottom gone with its server: every level above it
	// unavailable, and brought back through the pipeline, to the top.
	out, isErr := call("core_service_stop", map[string]any{"name": "echo-provider"})
	require.False(t, isErr, out)
	waitServiceState(t, call, "echo-provider", "stopped")
	assert.False(t, available("top"))
	assert.Equal(t, []string{"x_echo-provider_echo"}, missing("top"))
	eventually(t, "top's verdict invalid and its tool gone", func() bool {
		top, _ := e.resource(t, "workflows", "top")
		otop, _ := e.resource(t, "workflows", "otop")
		return !top.Status.Valid && !otop.Status.Valid && !hasTool(t, direct, "workflow_top")
	})
	top, _ := e.resource(t, "workflows", "top")
	assert.Equal(t, []string{"step only (through mid → deep): tool x_echo-provider_echo is not offered by any running server"},
		top.Status.ValidationErrors)

	out, isErr = call("core_service_start", map[string]any{"name": "echo-provider"})
	require.False(t, isErr, out)
	waitServiceState(t, call, "echo-provider", "running")
	assert.True(t, available("top"))
	eventually(t, "top valid again, its tool listed", func() bool {
		top, _ := e.resource(t, "workflows", "top")
		return top.Status.Valid && hasTool(t, direct, "workflow_top")
	})
}
