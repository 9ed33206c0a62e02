package coretools

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/musterd/musterd/pkg/events"
	"github.com/musterd/musterd/pkg/identity"
)

// core_workflow_available, _list and _get judge a workflow for the caller:
// Options.WorkflowAvailability is asked for the caller's owner.
func TestWorkflowAvailabilityIsJudgedForTheCaller(t *testing.T) {
	h := newHarness(t)
	_, isErr := h.call(t, "core_workflow_create", map[string]any{"name": "flow", "steps": []any{map[string]any{"id": "a", "tool": "x_jira_search"}}})
	require.False(t, isErr)
	alice := identity.Identity{Subject: "alice", Issuer: "https://idp.test"}
	p, err := New(Options{Index: h.index, Statuses: h.statuses,
		WorkflowAvailability: func(_ events.Key, owner string) (bool, []string, bool) {
			if owner == alice.Owner() {
				return true, nil, true
			}
			return false, []string{"x_jira_search"}, true
		}})
	require.NoError(t, err)
	call := func(ctx context.Context, tool string, args map[string]any) map[string]any {
		res, err := p.CallTool(ctx, tool, args, nil)
		require.NoError(t, err)
		require.False(t, res.IsError)
		var out map[string]any
		require.NoError(t, json.Unmarshal([]byte(res.Content[0].(*mcp.TextContent).Text), &out))
		return out
	}
	asAlice := identity.With(context.Background(), alice)
	asBob := identity.With(context.Background(), identity.Identity{Subject: "bob", Issuer: "https://idp.test"})

	assert.Equal(t, true, call(asAlice, "core_workflow_available", map[string]any{"name": "flow"})["available"])
	assert.Equal(t, false, call(asBob, "core_workflow_available", map[string]any{"name": "flow"})["available"])
	assert.Equal(t, false, call(context.Background(), "core_workflow_available", map[string]any{"name": "flow"})["available"])
	assert.Equal(t, []any{map[string]any{"name": "flow", "available": true}}, call(asAlice, "core_workflow_list", nil)["workflows"])
	assert.Equal(t, []any{map[string]any{"name": "flow", "available": false}}, call(asBob, "core_workflow_list", nil)["workflows"])
	got := call(asBob, "core_workflow_get", map[string]any{"name": "flow"})["workflow"].(map[string]any)
	assert.Equal(t, false, got["available"])
	assert.Equal(t, []any{"x_jira_search"}, got["missingTools"])
	got = call(asAlice, "core_workflow_get", map[string]any{"name": "flow"})["workflow"].(map[string]any)
	assert.Equal(t, true, got["available"])
}
