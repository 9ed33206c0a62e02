package main

import (
	"encoding/json"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A workflow whose step calls a protected server's tool is the business of
// the users who logged in to that server: core_workflow_available,
// core_workflow_list and core_workflow_get say it is available to alice,
// once she logged in, and not to bob, who did not, at the same time; and
// alice's run calls the server as her.
func TestE2EAWorkflowOnAProtectedServerIsAvailableToTheUsersLoggedInToIt(t *testing.T) {
	r := startLoginRig(t)
	r.write(t, "workflows/runbook.yaml", `apiVersion: muster.giantswarm.io/v1alpha1
kind: Workflow
metadata:
  name: runbook
spec:
  steps:
    - {id: who, tool: x_protected_whoami, store: true}
`)
	alice, bob := r.mcpClient(t, "/mcp", "2025-11-25", nil), r.mcpClient(t, "/mcp", "2025-11-25", nil)
	available := func(who string, cs *mcp.ClientSession) bool {
		t.Helper()
		out, isErr := musterCall(t, cs, "core_workflow_available", map[string]any{"name": "runbook"})
		require.False(t, isErr, out)
		var doc struct{ Available bool }
		require.NoError(t, json.Unmarshal([]byte(out), &doc), out)
		return doc.Available
	}
	eventually(t, "the workflow is declared", func() bool {
		_, isErr := musterCall(t, alice, "core_workflow_get", map[string]any{"name": "runbook"})
		return !isErr
	})
	assert.False(t, available("alice", alice), "before any login")

	r.login(t, alice, "alice")
	assert.True(t, available("alice", alice), "alice logged in")
	assert.False(t, available("bob", bob), "alice's login is not bob's")
	list, isErr := musterCall(t, bob, "core_workflow_list", nil)
	require.False(t, isErr, list)
	assert.JSONEq(t, `{"workflows":[{"name":"runbook","available":false}]}`, list)
	list, isErr = musterCall(t, alice, "core_workflow_list", nil)
	require.False(t, isErr, list)
	assert.JSONEq(t, `{"workflows":[{"name":"runbook","available":true}]}`, list)

	ran, isErr := musterCall(t, alice, "workflow_runbook", nil)
	require.False(t, isErr, ran)
	whoami, isErr := musterCall(t, alice, "x_protected_whoami", nil)
	require.False(t, isErr, whoami)
	assert.Contains(t, ran, whoami, "alice's run calls the server as her")

	out, isErr := musterCall(t, alice, "core_auth_logout", map[string]any{"server": "protected"})
	require.False(t, isErr, out)
	assert.False(t, available("alice", alice), "logged out")
}
