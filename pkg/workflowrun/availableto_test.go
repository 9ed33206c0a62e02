package workflowrun_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/musterd/musterd/pkg/events"
	"github.com/musterd/musterd/pkg/workflowrun"
)

type callerKey struct{}

// With Options.AvailableTo, a caller's run is judged by the caller's own
// view: it runs though the verdict misses a tool that caller is offered,
// and a caller missing tools is told its own, not the verdict's.
func TestACallersRunIsJudgedByTheCallersOwnView(t *testing.T) {
	h := newHarness(t, workflowrun.Options{AvailableTo: func(ctx context.Context, _ events.Key) (bool, []string) {
		switch ctx.Value(callerKey{}) {
		case "alice": // her own connection offers x_git_status
			return true, nil
		case "bob":
			return false, []string{"x_git_status"}
		}
		return false, nil // no caller: the verdict decides
	}})
	h.declare(wf("needy", "  steps:\n    - {id: s, tool: x_git_status}\n"))

	text, isError := h.call(context.Background(), "needy", nil)
	assert.True(t, isError)
	assert.Equal(t, "workflow needy is not available (missing required tools: x_git_status)", text, "no caller: the verdict's")
	text, isError = h.call(context.WithValue(context.Background(), callerKey{}, "bob"), "needy", nil)
	assert.True(t, isError)
	assert.Equal(t, "workflow needy is not available (missing required tools: x_git_status)", text)
	assert.Zero(t, h.router.calls.Load(), "nothing was called")

	text, _ = h.call(context.WithValue(context.Background(), callerKey{}, "alice"), "needy", nil)
	assert.NotContains(t, text, "not available", "alice's run runs")
	assert.Contains(t, text, `"steps":[{"error":"calling x_git_status: `, "its step was called (this router has no such tool)")
}
