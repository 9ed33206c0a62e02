package main

import (
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apimeta "k8s.io/apimachinery/pkg/api/meta"

	"github.com/musterd/musterd/pkg/apis/muster/v1alpha1"
	"github.com/musterd/musterd/pkg/reconcilers/mcpserver"
)

// The Done-when item "Kubernetes mode": create, update and delete through
// MCP act on the custom resources, a stale resourceVersion is a conflict
// that leaves the other writer's edit in place, and an operator's stop is
// kept in the CR's status through a restart of musterd.
func TestE2EKubeDefinitionsAndStopThroughMCP(t *testing.T) {
	k := startKube(t)
	d := k.musterd(t)
	d.waitReady(t)
	cs := d.mcpClient(t, "/mcp", "2024-11-05", nil)
	marker := newMarker()

	out, isErr := musterCall(t, cs, "core_mcpserver_create", map[string]any{"name": "kube-life", "type": "stdio", "autoStart": true,
		"command": fakeServer(), "args": []any{"-tools", marker}, "env": map[string]any{"K_TOKEN": "s3cr3t-kube"}, "wait": true})
	require.False(t, isErr, out)
	assert.Equal(t, "MCP server 'kube-life' created successfully (Synced)", out)
	s := k.waitStatus(t, "kube-life", "runs", runningGen("kube-life", marker, 1))
	assert.Equal(t, map[string]string{"K_TOKEN": "s3cr3t-kube"}, s.Spec.Env, "written as asked")

	out, isErr = musterCall(t, cs, "core_mcpserver_update", map[string]any{"name": "kube-life", "args": []any{"-tools", marker + "b"}, "wait": true})
	require.False(t, isErr, out)
	assert.Equal(t, "MCP server 'kube-life' updated successfully (Synced)", out)
	s = k.waitStatus(t, "kube-life", "runs generation 2", runningGen("kube-life", marker+"b", 2))

	// Someone else (kubectl) updates the CR after it was read.
	read := s.ResourceVersion
	s.Spec.Description = "edited with kubectl"
	require.NoError(t, k.cp.Client.Update(t.Context(), s))
	out, isErr = musterCall(t, cs, "core_mcpserver_update", map[string]any{"name": "kube-life", "description": "mine", "resourceVersion": read})
	assert.True(t, isErr)
	assert.True(t, strings.HasPrefix(out, "Failed to update MCP server: conflict: MCP server kube-life (default/kube-life) was changed by someone else"), out)
	out, isErr = musterCall(t, cs, "core_mcpserver_delete", map[string]any{"name": "kube-life", "resourceVersion": read})
	assert.True(t, isErr)
	assert.Contains(t, out, "conflict")
	s, ok := k.server(t, "kube-life")
	require.True(t, ok, "the stale delete deleted nothing")
	assert.Equal(t, "edited with kubectl", s.Spec.Description, "the other writer's edit survives")

	// A stop is kept in the CR's status, through a restart of musterd.
	out, isErr = musterCall(t, cs, "core_service_stop", map[string]any{"name": "kube-life", "reason": "maintenance"})
	require.False(t, isErr, out)
	assert.Equal(t, "Successfully stopped service 'kube-life'", out)
	stopped := func(s *v1alpha1.MCPServer) bool {
		ready := apimeta.FindStatusCondition(s.Status.Conditions, v1alpha1.ConditionReady)
		return s.Status.State == v1alpha1.MCPServerStateStopped && s.Status.Override != nil && s.Status.Override.State == "stopped" &&
			ready != nil && ready.Reason == mcpserver.ReasonStoppedByOperator
	}
	k.waitStatus(t, "kube-life", "is stopped by the operator", stopped)
	assert.Empty(t, serverProcs(marker))
	require.NoError(t, d.cmd.Process.Signal(syscall.SIGKILL))
	<-d.exited
	d = k.musterd(t)
	d.waitReady(t)
	cs = d.mcpClient(t, "/mcp", "2024-11-05", nil)
	out, isErr = musterCall(t, cs, "core_service_status", map[string]any{"name": "kube-life"})
	require.False(t, isErr, out)
	k.waitStatus(t, "kube-life", "is still stopped after musterd's restart", func(s *v1alpha1.MCPServer) bool {
		return stopped(s) && s.Status.ObservedGeneration == s.Generation
	})
	assert.Empty(t, serverProcs(marker), "the restarted musterd did not start it")
	out, isErr = musterCall(t, cs, "core_service_start", map[string]any{"name": "kube-life"})
	require.False(t, isErr, out)
	assert.Equal(t, "Successfully started service 'kube-life'", out)
	k.waitStatus(t, "kube-life", "runs again, its override gone", func(s *v1alpha1.MCPServer) bool {
		return s.Status.State == v1alpha1.MCPServerStateRunning && s.Status.Override == nil
	})

	// Delete through MCP: the CR is gone, and so is the process.
	out, isErr = musterCall(t, cs, "core_mcpserver_delete", map[string]any{"name": "kube-life", "wait": true})
	require.False(t, isErr, out)
	assert.Equal(t, "MCP server 'kube-life' deleted successfully (Deleted)", out)
	_, ok = k.server(t, "kube-life")
	assert.False(t, ok)
	eventually(t, "no process is left", func() bool { return len(serverProcs(marker)) == 0 })
	out, isErr = musterCall(t, cs, "core_mcpserver_delete", map[string]any{"name": "kube-life"})
	assert.True(t, isErr)
	assert.Equal(t, "Failed to delete MCP server: MCP server kube-life not found", out)
}
