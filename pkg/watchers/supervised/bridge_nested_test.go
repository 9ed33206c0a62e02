package supervised_test

import (
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"

	"github.com/musterd/musterd/pkg/apis/muster/v1alpha1"
	"github.com/musterd/musterd/pkg/events"
	"github.com/musterd/musterd/pkg/resources"
	"github.com/musterd/musterd/pkg/supervisor"
)

// declareCaller declares a workflow whose one step calls the workflow
// named callee.
func (h *harness) declareCaller(name, callee string) events.Key {
	k := events.NewKey(v1alpha1.KindWorkflow, "", name)
	wf := &v1alpha1.Workflow{Spec: v1alpha1.WorkflowSpec{Steps: []v1alpha1.WorkflowStep{{ID: "s", Tool: "workflow_" + callee}}}}
	wf.Name = name
	h.ix.SetFile("workflows/"+name+".yaml", []resources.Doc{{Key: k, Object: wf, Hash: callee}}, nil, k)
	return k
}

func TestAToolChangeRevalidatesTheWorkflowsThatNeedItThroughOthers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t)
		mid := h.declareCaller("mid", "greet") // greet names x_echo_echo
		top := h.declareCaller("top", "mid")
		h.declareCaller("loop", "loop") // a cycle names no tool: never brought back, and the walk ends
		h.start()
		h.change(echo, up("echo"))
		got, oneChain := h.take()
		assert.Equal(t, []events.Event{
			events.ServiceStateChanged{Key: echo, State: "Running"},
			workflowChanged(greet), workflowChanged(mid), workflowChanged(top),
		}, got, "greet names the tool; mid calls greet, top calls mid: their verdicts follow greet's")
		assert.True(t, oneChain)

		h.change(echo, supervisor.Observed{State: v1alpha1.MCPServerStateStopped})
		got, _ = h.take()
		assert.Equal(t, []events.Event{workflowChanged(greet), workflowChanged(mid), workflowChanged(top)}, got,
			"the tool gone: the three again")
		h.stop()
	})
}
