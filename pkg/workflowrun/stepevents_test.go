package workflowrun_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/musterd/musterd/pkg/events"
	"github.com/musterd/musterd/pkg/workflowrun"
)

// nextRunEvent returns the next event published that is not a step's.
func nextRunEvent(h *harness) events.Event {
	for {
		switch e := (<-h.events).(type) {
		case events.WorkflowStepStarted, events.WorkflowStepFinished:
		default:
			return e
		}
	}
}

// published drains what the runs published so far.
func published(h *harness) []events.Event {
	var out []events.Event
	for {
		select {
		case e := <-h.events:
			out = append(out, e)
		default:
			return out
		}
	}
}

func TestEachStepPublishesItsStartAndOutcome(t *testing.T) {
	h := newHarness(t, workflowrun.Options{})
	k := h.declare(wf("steps", `  steps:
    - {id: first, tool: x_fake_json}
    - id: skipped
      tool: x_fake_json
      condition: {template: "{{ eq 1 2 }}"}
    - {id: tolerated, tool: x_fake_fail, allowFailure: true}
    - {id: last, tool: x_fake_fail}
`))
	doc, isErr := h.run("steps", nil)
	require.True(t, isErr)
	id := doc["execution_id"].(string)

	type seen struct{ typ, step, tool, status, cond string }
	var got []seen
	for _, e := range published(h) {
		switch e := e.(type) {
		case events.WorkflowStepStarted:
			assert.Equal(t, k, e.Key)
			assert.Equal(t, id, e.ExecutionID)
			got = append(got, seen{"started", e.StepID, e.Tool, "", e.Condition})
		case events.WorkflowStepFinished:
			assert.Equal(t, k, e.Key)
			assert.Equal(t, id, e.ExecutionID)
			assert.GreaterOrEqual(t, e.Duration, time.Duration(0))
			got = append(got, seen{"finished", e.StepID, e.Tool, e.Status, e.Condition})
			if e.StepID == "tolerated" {
				assert.True(t, e.AllowFailure)
				assert.Contains(t, e.Error, "failed as asked")
			}
			if e.Status == events.StepCompleted {
				assert.Empty(t, e.Error)
			}
		}
	}
	assert.Equal(t, []seen{
		{"started", "first", "x_fake_json", "", ""},
		{"finished", "first", "x_fake_json", "completed", ""},
		{"finished", "skipped", "x_fake_json", "skipped", "false"},
		{"started", "tolerated", "x_fake_fail", "", ""},
		{"finished", "tolerated", "x_fake_fail", "failed", ""},
		{"started", "last", "x_fake_fail", "", ""},
		{"finished", "last", "x_fake_fail", "failed", ""},
	}, got)
}
