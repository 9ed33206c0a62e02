package supervised_test

import (
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/musterd/musterd/pkg/apis/muster/v1alpha1"
	"github.com/musterd/musterd/pkg/catalogue"
	"github.com/musterd/musterd/pkg/events"
	"github.com/musterd/musterd/pkg/supervisor"
)

func policy(t *testing.T, value string) *catalogue.Exposure {
	t.Helper()
	p, err := catalogue.ParseExposure(value)
	require.NoError(t, err)
	return p
}

// A policy hiding a tool brings back the workflow naming it, and nothing
// else: no ServiceStateChanged, as the server runs on as it did.
func TestAPolicyHidingAToolRevalidatesTheWorkflowsNamingIt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t)
		h.start()
		h.change(echo, up("echo", "reverse"))
		h.take()

		h.br.SetExposure(echo, policy(t, `tools: {exclude: [echo]}`))
		got, oneChain := h.take()
		assert.Equal(t, []events.Event{workflowChanged(greet)}, got)
		assert.True(t, oneChain)
		assert.Equal(t, []string{"x_echo_reverse"}, h.cat.Tools())

		h.br.SetExposure(echo, policy(t, `tools: {exclude: [echo]}`))
		got, _ = h.take()
		assert.Empty(t, got, "the same policy again: nothing")

		h.br.SetExposure(echo, policy(t, `tools: {exclude: [nothing-here]}`))
		got, _ = h.take()
		assert.Equal(t, []events.Event{workflowChanged(greet)}, got, "lifted: greet is judged again")
		h.stop()
	})
}

// Two servers exposing one name are both brought back, so that each
// status says so; and again when the conflict ends.
func TestServersWhoseConflictsChangeAreReconciled(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t)
		h.start()
		other := events.NewKey(v1alpha1.KindMCPServer, "", "other")
		h.change(echo, up("echo"))
		h.br.SetExposure(other, policy(t, `prefix: x_echo`))
		h.change(other, supervisor.Observed{State: running, PID: 43, Tools: []string{"echo"}, ToolDefs: defs("echo")})
		got, _ := h.take()
		assert.Contains(t, got, events.Event(events.ResourceChanged{Key: echo, Operation: events.OperationUpdate, Source: events.SourceServiceState}))
		assert.Contains(t, got, events.Event(events.ResourceChanged{Key: other, Operation: events.OperationUpdate, Source: events.SourceServiceState}))
		assert.Empty(t, h.cat.Tools(), "x_echo_echo is held back on both")

		h.br.SetExposure(other, nil)
		got, _ = h.take()
		assert.Contains(t, got, events.Event(events.ResourceChanged{Key: echo, Operation: events.OperationUpdate, Source: events.SourceServiceState}))
		assert.Contains(t, got, events.Event(events.ResourceChanged{Key: other, Operation: events.OperationUpdate, Source: events.SourceServiceState}))
		assert.Equal(t, []string{"x_echo_echo", "x_other_echo"}, h.cat.Tools())
		h.stop()
	})
}
