package coretools

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/musterd/musterd/pkg/apis/muster/v1alpha1"
)

// A protected server musterd holds no credential for is Auth Required,
// but to a caller whose own connection to it is up it is Connected, in
// core_mcpserver_list/get and core_service_list/status alike, as muster
// shows it once the caller's session has logged in; every other caller,
// and one with no identity, still sees Auth Required.
func TestAServersStateIsTheCallers(t *testing.T) {
	l := &logins{connected: map[string]bool{"session:alice|jira": true}}
	p := authProvider(t, l, map[string]v1alpha1.MCPServerState{"jira": v1alpha1.MCPServerStateAuthRequired, "git": v1alpha1.MCPServerStateRunning}, nil)
	state := func(ctx context.Context, tool string, args map[string]any, field string) []string {
		text, isErr, _ := call(t, p, ctx, tool, args)
		require.False(t, isErr, text)
		var out map[string]any
		require.NoError(t, json.Unmarshal([]byte(text), &out), text)
		var states []string
		pick := func(m map[string]any) { states = append(states, m["name"].(string)+"="+m[field].(string)) }
		switch {
		case out["mcpServers"] != nil:
			for _, s := range out["mcpServers"].([]any) {
				pick(s.(map[string]any))
			}
		case out["services"] != nil:
			for _, s := range out["services"].([]any) {
				pick(s.(map[string]any))
			}
		default:
			pick(out)
		}
		return states
	}
	for _, c := range []struct {
		ctx         context.Context
		list, svc   []string
		get, status []string
	}{
		{ctx: as("alice"), list: []string{"git=Running", "jira=Connected"}, svc: []string{"git=running", "jira=connected"},
			get: []string{"jira=Connected"}, status: []string{"jira=connected"}},
		{ctx: as("bob"), list: []string{"git=Running", "jira=Auth Required"}, svc: []string{"git=running", "jira=auth_required"},
			get: []string{"jira=Auth Required"}, status: []string{"jira=auth_required"}},
		{ctx: context.Background(), list: []string{"git=Running", "jira=Auth Required"}, svc: []string{"git=running", "jira=auth_required"},
			get: []string{"jira=Auth Required"}, status: []string{"jira=auth_required"}},
	} {
		assert.Equal(t, c.list, state(c.ctx, "core_mcpserver_list", nil, "state"))
		assert.Equal(t, c.get, state(c.ctx, "core_mcpserver_get", map[string]any{"name": "jira"}, "state"))
		assert.Equal(t, c.svc, state(c.ctx, "core_service_list", nil, "state"))
		assert.Equal(t, c.status, state(c.ctx, "core_service_status", map[string]any{"name": "jira"}, "state"))
	}
	text, _, _ := call(t, p, as("alice"), "core_mcpserver_get", map[string]any{"name": "jira"})
	assert.NotContains(t, text, "Authentication required", "no status message of a state the caller is not in")
}
