package main

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/musterd/musterd/internal/npmtest"
	"github.com/musterd/musterd/pkg/controls"
	"github.com/musterd/musterd/pkg/coretools"
)

// A declared workflow that cannot run is no tool on /mcp/direct, yet its
// native call says what it misses, as call_tool's does; and
// core_reconcile_status with no name shows the overview the API shows.
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

// A client subscribed to a managed server's resource hears of its
// updates: musterd subscribes at the server (npm's server-everything) and
// forwards its notifications/resources/updated under the exposed URI.
func TestE2EMCPResourceUpdatesReachSubscribedSessions(t *testing.T) {
	everything := npmtest.ServerEverything(t)
	e := startFS(t)
	e.write(t, "mcpservers/everything.yaml", mcpServerYAML("everything", "type: stdio", "autoStart: true", "command: "+yamlValue(everything), `args: ["stdio"]`, "timeout: 60"))
	e.waitServer(t, "everything", "running", func(s serverObject) bool { return s.Status.State == "Running" })

	updated := make(chan string, 64)
	cs := e.mcpClient(t, "/mcp/direct", "2025-06-18", &mcp.ClientOptions{
		ResourceUpdatedHandler: func(_ context.Context, req *mcp.ResourceUpdatedNotificationRequest) {
			select {
			case updated <- req.Params.URI:
			default:
			}
		},
	})
	caps := cs.InitializeResult().Capabilities
	require.NotNil(t, caps.Resources)
	assert.True(t, caps.Resources.Subscribe, "musterd advertises resource subscriptions")

	var uri string
	eventually(t, "server-everything's resources are listed", func() bool {
		for r, err := range cs.Resources(context.Background(), nil) {
			require.NoError(t, err)
			if r.URI == coretools.AuthStatusURI {
				continue // musterd's own, which announces nothing
			}
			uri = r.URI
			return true
		}
		return false
	})
	require.NoError(t, cs.Subscribe(context.Background(), &mcp.SubscribeParams{URI: uri}))
	// server-everything sends updates of the resources subscribed to once
	// this tool is toggled on, at once and every 5 s.
	waitUpdate := func(when string) {
		t.Helper()
		// After a restart its tools are offered again once it listed them.
		eventually(t, "the toggle is called", func() bool {
			res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "x_everything_toggle-subscriber-updates", Arguments: map[string]any{}})
			if err != nil {
				require.Contains(t, err.Error(), "unknown tool")
				return false
			}
			require.False(t, res.IsError)
			return true
		})
		select {
		case got := <-updated:
			assert.Equal(t, uri, got, "the update names the exposed URI")
		case <-time.After(e2eDeadline):
			t.Fatalf("no notifications/resources/updated for %s %s within %s\n%s", uri, when, e2eDeadline, e.stderr)
		}
	}
	waitUpdate("after subscribing")

	// A restart is a new process and session at the server, without
	// subscriptions: musterd subscribes again. core_service_restart
	// answers once the restart is reconciled.
	out, isErr := callTool(t, cs, "core_service_restart", map[string]any{"name": "everything"})
	require.False(t, isErr, out)
	require.Contains(t, out, "restart", out)
	for len(updated) > 0 { // updates the old process sent
		<-updated
	}
	waitUpdate("after the server restarted")
	require.NoError(t, cs.Unsubscribe(context.Background(), &mcp.UnsubscribeParams{URI: uri}))
}
