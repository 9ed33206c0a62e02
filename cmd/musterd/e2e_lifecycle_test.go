package main

// A definition's and a server's lifecycle end to end (declare, start,
// stop, restart, update, delete): the real binary, driven through
// the MCP endpoint exactly as muster's CLI calls it (protocol 2024-11-05,
// call_tool's envelope), with files, processes and the API checked at each
// step.

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func fileVersion(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	sum := sha256.Sum256(data)
	return "sha256:" + hex.EncodeToString(sum[:])
}

func TestE2ELifecycleThroughMCP(t *testing.T) {
	e := startFS(t)
	cs := e.mcpClient(t, "/mcp", "2024-11-05", nil)
	marker := newMarker()
	serverFile := filepath.Join(e.config, "mcpservers", "life.yaml")
	flowFile := filepath.Join(e.config, "workflows", "lifeflow.yaml")

	// muster create mcpserver: the file in muster's layout, 0600, the
	// secret written as asked and never echoed; with wait, once Synced.
	out, isErr := musterCall(t, cs, "core_mcpserver_create", map[string]any{"name": "life", "type": "stdio", "autoStart": true,
		"command": fakeServer(), "args": []any{"-tools", marker}, "env": map[string]any{"LIFE_TOKEN": "s3cr3t-life"}, "wait": true})
	require.False(t, isErr, out)
	assert.Equal(t, "MCP server 'life' created successfully (Synced)", out)
	data, err := os.ReadFile(serverFile)
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(string(data), "apiVersion: muster.giantswarm.io/v1alpha1\nkind: MCPServer\nmetadata:\n  name: life\nspec:\n"), string(data))
	assert.Contains(t, string(data), "LIFE_TOKEN: s3cr3t-life")
	info, err := os.Stat(serverFile)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), info.Mode().Perm())
	s := e.waitServer(t, "life", "is Running", running("x_life_"+marker))
	assert.Equal(t, map[string]string{"LIFE_TOKEN": "[redacted]"}, s.Spec.Env, "the API never shows the secret")
	first := theServerProc(t, marker)
	assert.Equal(t, e.cmd.Process.Pid, first.ppid)

	// The server's tool, through call_tool.
	out, isErr = musterCall(t, cs, "x_life_"+marker, map[string]any{"message": "hello"})
	require.False(t, isErr, out)
	assert.Contains(t, out, "hello")

	// muster create workflow over that tool; reconciled valid.
	out, isErr = musterCall(t, cs, "core_workflow_create", map[string]any{"name": "lifeflow", "description": "e2e",
		"steps": []any{map[string]any{"id": "say", "tool": "x_life_" + marker, "args": map[string]any{"message": "{{ .input.who }}"}, "allow_failure": false}},
		"args":  map[string]any{"who": map[string]any{"type": "string", "required": true}}, "wait": true})
	require.False(t, isErr, out)
	assert.Equal(t, "Workflow created successfully (Synced)", out)
	data, err = os.ReadFile(flowFile)
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(string(data), "apiVersion: muster.giantswarm.io/v1alpha1\nkind: Workflow\nmetadata:\n  name: lifeflow\nspec:\n"), string(data))
	r := e.waitWorkflow(t, "lifeflow", "Synced", "x_life_"+marker)
	assert.True(t, r.Status.Valid, "%+v", r.Status)
	assert.Empty(t, r.Status.MissingTools)
	out, isErr = musterCall(t, cs, "core_workflow_available", map[string]any{"name": "lifeflow"})
	require.False(t, isErr, out)
	assert.JSONEq(t, `{"name":"lifeflow","available":true}`, out)

	// muster start workflow lifeflow who=world: the workflow calls the
	// server's tool.
	var ran string
	eventually(t, "workflow_lifeflow runs", func() bool {
		out, isErr := musterCall(t, cs, "workflow_lifeflow", map[string]any{"who": "world"})
		ran = out
		return !isErr
	})
	assert.Contains(t, ran, "world", "the step's tool echoed the workflow's argument")

	// A conflicting edit by hand, after the caller read the file: the update
	// based on that read is a conflict, and the edit survives.
	read := fileVersion(t, serverFile)
	serverData, err := os.ReadFile(serverFile)
	require.NoError(t, err)
	byHand := string(serverData) + "  description: edited by hand\n"
	require.NoError(t, os.WriteFile(serverFile, []byte(byHand), 0o600))
	out, isErr = musterCall(t, cs, "core_mcpserver_update", map[string]any{"name": "life", "description": "mine", "resourceVersion": read})
	assert.True(t, isErr)
	assert.Contains(t, out, "Failed to update MCP server: conflict: MCP server life (mcpservers/life.yaml) was changed by someone else")
	data, _ = os.ReadFile(serverFile)
	assert.Equal(t, byHand, string(data), "the edit survives")

	// Update both: the server restarts with its new args, the workflow is
	// validated again against the new tool.
	out, isErr = musterCall(t, cs, "core_mcpserver_update", map[string]any{"name": "life", "args": []any{"-tools", marker + ",two"}, "wait": true})
	require.False(t, isErr, out)
	assert.Equal(t, "MCP server 'life' updated successfully (Synced)", out)
	e.waitServer(t, "life", "runs the new args", running("x_life_"+marker, "x_life_two"))
	second := theServerProc(t, marker, first)
	assert.False(t, first.alive(), "the old process is gone")
	data, _ = os.ReadFile(serverFile)
	assert.Contains(t, string(data), "description: edited by hand", "the update kept the hand edit it was based on")

	out, isErr = musterCall(t, cs, "core_workflow_update", map[string]any{"name": "lifeflow",
		"steps": []any{map[string]any{"id": "say", "tool": "x_life_two"}}, "wait": true})
	require.False(t, isErr, out)
	assert.Equal(t, "Workflow 'lifeflow' updated successfully (Synced)", out)
	r = e.waitWorkflow(t, "lifeflow", "Synced", "x_life_two")
	assert.True(t, r.Status.Valid, "%+v", r.Status)
	eventually(t, "the updated workflow_lifeflow runs its new step", func() bool {
		out, isErr := musterCall(t, cs, "workflow_lifeflow", map[string]any{"who": "again", "_debug": true})
		ran = out
		return !isErr && strings.Contains(out, "x_life_two")
	})

	// muster stop service / start service.
	out, isErr = musterCall(t, cs, "core_service_stop", map[string]any{"name": "life"})
	require.False(t, isErr, out)
	assert.Equal(t, "Successfully stopped service 'life'", out)
	assert.False(t, second.alive())
	out, _ = musterCall(t, cs, "core_service_stop", map[string]any{"name": "life"})
	assert.Equal(t, "Service 'life' is already stopped", out)
	out, isErr = musterCall(t, cs, "core_service_start", map[string]any{"name": "life"})
	require.False(t, isErr, out)
	assert.Equal(t, "Successfully started service 'life'", out)
	third := theServerProc(t, marker, first, second)
	out, isErr = musterCall(t, cs, "core_service_restart", map[string]any{"name": "life"})
	require.False(t, isErr, out)
	assert.Equal(t, "Successfully restarted service 'life'", out)
	theServerProc(t, marker, first, second, third)
	assert.False(t, third.alive())

	// Bad input through MCP: muster's error texts, nothing changed.
	out, isErr = musterCall(t, cs, "core_mcpserver_create", map[string]any{"name": "life", "type": "stdio", "command": "x"})
	assert.True(t, isErr)
	assert.Equal(t, "MCP server 'life' already exists", out)
	out, isErr = musterCall(t, cs, "core_mcpserver_create", map[string]any{"name": "other", "type": "stdio", "command": "x", "timeout": "soon"})
	assert.True(t, isErr)
	assert.True(t, strings.HasPrefix(out, "Invalid MCP server definition: spec.timeout:"), out)
	_, err = os.Stat(filepath.Join(e.config, "mcpservers", "other.yaml"))
	assert.True(t, os.IsNotExist(err))

	// Delete both: files, processes and the API.
	out, isErr = musterCall(t, cs, "core_workflow_delete", map[string]any{"name": "lifeflow", "wait": true})
	require.False(t, isErr, out)
	assert.Equal(t, "Workflow 'lifeflow' deleted successfully (Deleted)", out)
	_, err = os.Stat(flowFile)
	assert.True(t, os.IsNotExist(err))
	_, ok := e.resource(t, "workflows", "lifeflow")
	assert.False(t, ok)
	out, isErr = musterCall(t, cs, "core_mcpserver_delete", map[string]any{"name": "life", "wait": true})
	require.False(t, isErr, out)
	assert.Equal(t, "MCP server 'life' deleted successfully (Deleted)", out)
	_, err = os.Stat(serverFile)
	assert.True(t, os.IsNotExist(err))
	_, ok = e.server(t, "life")
	assert.False(t, ok)
	eventually(t, "no process is left", func() bool { return len(serverProcs(marker)) == 0 })
	assert.Empty(t, descendants(e.cmd.Process.Pid))
	out, isErr = musterCall(t, cs, "core_mcpserver_delete", map[string]any{"name": "life"})
	assert.True(t, isErr)
	assert.Equal(t, "Failed to delete MCP server: MCP server life not found", out)
}
