package main

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/musterd/musterd/pkg/controls"
)

// A declared workflow that cannot run is no tool on /mcp/direct, yet its
// native call says what it misses, as call_tool's does (#13); and
// core_reconcile_status with no name shows the overview the API shows
// (#14).
func TestE2EDirectCallOfAnUnavailableWorkflowAndTheMCPOverview(t *testing.T) {
	e := startFS(t)
	e.write(t, "mcpservers/fake.yaml", mcpServerYAML("fake", append(stdioSpec("-tools", "echo"), "toolPrefix: fk")...))
	e.write(t, "workflows/deploy.yaml", workflowYAML("deploy", "x_nowhere_apply"))
	e.waitServer(t, "fake", "running", func(s serverObject) bool { return s.Status.State == "Running" })
	direct := e.mcpClient(t, "/mcp/direct", "2025-06-18", nil)
	eventually(t, "deploy is listed unavailable", func() bool {
		out, _ := callTool(t, direct, "core_workflow_list", nil)
		return out == `{"workflows":[{"name":"deploy","available":false,"description":"e2e"}]}`
	})

	out, isErr := callTool(t, direct, "workflow_deploy", map[string]any{})
	assert.True(t, isErr)
	assert.Equal(t, "workflow deploy is not available (missing required tools: x_nowhere_apply)", out)

	// The overview, one source: the controls', as GET /api/v1/overview
	// answers it, once both have settled on the same state.
	var mcpView, apiView controls.Overview
	eventually(t, "core_reconcile_status's overview equals the API's", func() bool {
		out, isErr := callTool(t, direct, "core_reconcile_status", nil)
		require.False(t, isErr, out)
		var answer struct {
			Overview  *controls.Overview `json:"overview"`
			Resources []map[string]any   `json:"resources"`
			Total     int                `json:"total"`
		}
		require.NoError(t, json.Unmarshal([]byte(out), &answer), out)
		require.NotNil(t, answer.Overview, "no overview in %s", out)
		require.Equal(t, 2, answer.Total, "the per-resource states stay: %s", out)
		mcpView = *answer.Overview
		code, body := e.get(t, "/api/v1/overview")
		require.Equal(t, http.StatusOK, code, body)
		require.NoError(t, json.Unmarshal([]byte(body), &apiView))
		return assert.ObjectsAreEqual(mcpView, apiView)
	})
	assert.Equal(t, "filesystem", mcpView.Mode)
	assert.Equal(t, "leader", mcpView.Role)
	assert.Equal(t, map[string]int{"Running": 1}, mcpView.Servers)
	assert.Equal(t, 1, mcpView.Tools)
	assert.NotEmpty(t, mcpView.EnabledKinds)
}
