package workflow_test

import (
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/musterd/musterd/pkg/apis/muster/v1alpha1"
	"github.com/musterd/musterd/pkg/catalogue"
	"github.com/musterd/musterd/pkg/events"
)

// A workflow is judged for whoever asks: the tools of the servers a user
// connects to on their own (a protected server's login, a family's
// members among them) count for that user alone, and for no one else, as
// muster judges core_workflow_available for the caller's session.
func TestAvailabilityIsTheCallers(t *testing.T) {
	h := newHarness()
	const alice, bob = "user:https://idp|alice", "user:https://idp|bob"
	family := catalogue.Naming{Family: "kubernetes", InstanceArg: "management_cluster"}
	list := []*mcp.Tool{{Name: "list", InputSchema: map[string]any{"type": "object"}}}
	for _, name := range []string{"mc1-mcp-kubernetes", "mc2-mcp-kubernetes"} {
		h.cat.UpdateFor(alice, events.NewKey(v1alpha1.KindMCPServer, "", name), family, list, time.Now())
	}
	h.declare(t, "workflows/runbook.yaml", calls("runbook", "x_kubernetes_list"), wfKey("runbook"))
	h.declare(t, "workflows/missing.yaml", calls("missing", "x_this_tool_does_not_exist"), wfKey("missing"))

	got, found := h.r.AvailabilityFor(wfKey("runbook"), alice)
	require.True(t, found)
	assert.True(t, got.Available, "alice reaches the family's members")
	assert.Empty(t, got.MissingTools)

	for who, owner := range map[string]string{"bob": bob, "nobody in particular": ""} {
		got, _ := h.r.AvailabilityFor(wfKey("runbook"), owner)
		assert.False(t, got.Available, who)
		assert.Equal(t, []string{"x_kubernetes_list"}, got.MissingTools, who)
	}
	got, _ = h.r.Availability(wfKey("runbook"))
	assert.False(t, got.Available, "the catalogue's own view has none of alice's servers")

	got, _ = h.r.AvailabilityFor(wfKey("missing"), alice)
	assert.False(t, got.Available, "a tool no one offers is missing for alice too")
	_, found = h.r.AvailabilityFor(wfKey("undeclared"), alice)
	assert.False(t, found)
}
