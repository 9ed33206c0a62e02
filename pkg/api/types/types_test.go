package types_test

import (
	"net/url"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/musterd/musterd/pkg/api/types"
	"github.com/musterd/musterd/pkg/events"
)

func TestResolveKindAcceptsEveryAliasInAnyCase(t *testing.T) {
	for kind, aliases := range map[string][]string{
		"MCPServer": {"mcpservers", "mcpserver", "mcps", "MCPServer", "MCPS", "McpServers"},
		"Workflow":  {"workflows", "workflow", "wf", "Workflow", "WF"},
	} {
		for _, alias := range aliases {
			k, err := types.ResolveKind(alias)
			require.NoError(t, err, alias)
			assert.Equal(t, kind, k.Name, alias)
		}
	}
	_, err := types.ResolveKind("mcp")
	assert.ErrorIs(t, err, types.ErrUnknownKind)
	assert.EqualError(t, err, `unknown kind "mcp": valid kinds are mcpservers (mcpserver, mcps), workflows (workflow, wf)`)
}

func TestRefOfSpellsKeysAsPathsDo(t *testing.T) {
	assert.Equal(t, "workflows/default/greet", types.RefOf(events.Key{Kind: "Workflow", Name: "greet"}))
	assert.Equal(t, "mcpservers/ns/git", types.RefOf(events.NewKey("MCPServer", "ns", "git")))
	assert.Equal(t, "Other/default/x", types.RefOf(events.NewKey("Other", "", "x")))
}

func TestEventFilterRoundTripsThroughTheQuery(t *testing.T) {
	f := types.EventFilter{Kind: "Workflow", Namespace: "ns", Name: "greet", Types: []string{"ResourceSynced", "ResourceFailed"}}
	assert.Equal(t, "kind=Workflow&name=greet&namespace=ns&type=ResourceSynced%2CResourceFailed", f.Query().Encode())
	back, err := types.ParseEventFilter(f.Query())
	require.NoError(t, err)
	assert.Equal(t, f, back)
	assert.Empty(t, types.EventFilter{}.Query())

	back, err = types.ParseEventFilter(url.Values{"kind": {"wf"}, "type": {" StatusSynced "}})
	require.NoError(t, err)
	assert.Equal(t, types.EventFilter{Kind: "Workflow", Types: []string{"StatusSynced"}}, back, "aliases resolve; spaces around types are ignored")

	_, err = types.ParseEventFilter(url.Values{"kind": {"pods"}})
	assert.ErrorIs(t, err, types.ErrUnknownKind)
	_, err = types.ParseEventFilter(url.Values{"type": {"ResourceSynced,Nope"}})
	assert.ErrorContains(t, err, `unknown event type "Nope": valid types are BecameLeader, DefinitionValidated, IndexSynchronized,`)
}

func TestEventFilterMatch(t *testing.T) {
	greet := events.NewKey("Workflow", "", "greet")
	git := events.NewKey("MCPServer", "", "git")
	synced := events.ResourceSynced{Key: greet}
	trigger := events.ReconciliationTriggered{Keys: events.NewTriggeredKeys(events.TriggeredKey{Key: git}, events.TriggeredKey{Key: greet})}
	leader := events.BecameLeader{Identity: "pod"}

	for _, c := range []struct {
		filter types.EventFilter
		match  []events.Event
		miss   []events.Event
	}{
		{types.EventFilter{}, []events.Event{synced, trigger, leader}, nil},
		{types.EventFilter{Kind: "Workflow"}, []events.Event{synced, trigger}, []events.Event{leader, events.ResourceSynced{Key: git}}},
		{types.EventFilter{Name: "git"}, []events.Event{trigger, events.ResourceFailed{Key: git}}, []events.Event{synced, leader}},
		{types.EventFilter{Namespace: "default"}, []events.Event{synced, trigger}, []events.Event{leader, events.ResourceSynced{Key: events.NewKey("Workflow", "ns", "greet")}}},
		{types.EventFilter{Namespace: "ns"}, nil, []events.Event{synced, trigger}},
		{types.EventFilter{Types: []string{"BecameLeader", "ResourceSynced"}}, []events.Event{synced, leader}, []events.Event{trigger}},
		{types.EventFilter{Kind: "MCPServer", Types: []string{"ResourceSynced"}}, nil, []events.Event{synced, trigger, leader}},
	} {
		for _, e := range c.match {
			assert.True(t, c.filter.Match(e), "%+v should match %T", c.filter, e)
		}
		for _, e := range c.miss {
			assert.False(t, c.filter.Match(e), "%+v should not match %T %v", c.filter, e, e)
		}
	}
}
