package pipeline_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/musterd/musterd/pkg/apis/muster/v1alpha1"
	"github.com/musterd/musterd/pkg/reconcilers/workflow"
	"github.com/musterd/musterd/pkg/statusync"
	"github.com/musterd/musterd/pkg/supervisor"
)

// Ten servers that take 2 s each to start (as npx and uvx cold starts do)
// start side by side, holding none of the coordinator's two workers: every
// start begins before any ends, and a workflow edited during their start is
// reconciled (Synced, with the edit) before any of them is Running. The
// workflow waits for the server whose tool it names, and turns valid when
// that server's tools arrive. The order of events is asserted, not their
// timing.
func TestSlowServersStartSideBySideAndAWorkflowEditIsReconciledMeanwhile(t *testing.T) {
	t.Parallel()
	const servers = 10
	files := map[string]string{"workflows/wf.yaml": workflowYAML("wf", "x_s00_t0")}
	for i := range servers {
		name := fmt.Sprintf("s%02d", i)
		files["mcpservers/"+name+".yaml"] = serverYAML(name, true, "", "-slow-start", "2s", "-tools", fmt.Sprintf("t%d", i))
	}
	d := startDaemon(t, supervisor.Backoff{}, files)

	launches := func(order []string) int {
		n := 0
		for _, o := range order {
			if strings.HasSuffix(o, " launched") {
				n++
			}
		}
		return n
	}
	require.Eventually(t, func() bool { return launches(d.orderOf()) == servers }, waitLimit, time.Millisecond, "all ten starts began")
	for i := range servers {
		st, ok := d.serverStatus(mcpKey(fmt.Sprintf("s%02d", i)))
		if ok { // a reconcile may have run before the start began: it says Starting then
			assert.Equal(t, v1alpha1.MCPServerStateStarting, st.State)
		}
	}

	// The edit, during the starts: it names another starting server's tool.
	d.write("workflows/wf.yaml", workflowYAML("wf", "x_s01_t1"))
	var edited v1alpha1.WorkflowStatus
	require.Eventually(t, func() bool {
		st, ok := d.workflowStatus(wfKey("wf"))
		edited = st
		return ok && slices.Equal(st.ReferencedTools, []string{"x_s01_t1"}) && d.reconcileState(wfKey("wf")) == statusync.StateSynced
	}, waitLimit, time.Millisecond, "the edit reconciled")
	orderAtEdit := d.orderOf()
	for _, o := range orderAtEdit {
		assert.NotContains(t, o, " Running", "the edit was reconciled before any server was Running: %v", orderAtEdit)
	}
	assert.Empty(t, edited.ValidationErrors, "waiting, not invalid: %+v", edited)
	assert.False(t, edited.Valid, "not runnable yet")
	assert.Equal(t, workflow.ReasonWaitingForServer, edited.Conditions[0].Reason)
	assert.Contains(t, edited.Conditions[0].Message, "s01")

	for i := range servers {
		d.waitServer(mcpKey(fmt.Sprintf("s%02d", i)), "Running", running)
	}
	order := d.orderOf()
	lastLaunch, firstRunning := -1, -1
	for i, o := range order {
		if strings.HasSuffix(o, " launched") {
			lastLaunch = i
		}
		if strings.HasSuffix(o, " Running") && firstRunning < 0 {
			firstRunning = i
		}
	}
	assert.Less(t, lastLaunch, firstRunning, "side by side: every start began before any ended: %v", order)
	d.waitWorkflow(wfKey("wf"), "valid once s01's tools arrive", func(st v1alpha1.WorkflowStatus) bool {
		return st.Valid && len(st.MissingTools) == 0 && st.Conditions[0].Reason == workflow.ReasonValid
	})
	d.shutdown()
}
