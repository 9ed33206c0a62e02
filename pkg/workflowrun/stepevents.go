package workflowrun

import (
	"strconv"

	"github.com/musterd/musterd/pkg/events"
)

// stepStarted publishes that rec's step is about to call its tool.
func (r *runner) stepStarted(rec *record) {
	ev := events.WorkflowStepStarted{Meta: events.NewMeta(""), Key: r.key, ExecutionID: r.execID,
		StepID: rec.id, Tool: rec.tool}
	if rec.cond != nil {
		ev.Condition = strconv.FormatBool(rec.cond.passed)
	}
	r.e.publish(ev)
}

// stepFinished publishes rec's outcome: completed, failed or skipped.
func (r *runner) stepFinished(rec *record) {
	ev := events.WorkflowStepFinished{Meta: events.NewMeta(""), Key: r.key, ExecutionID: r.execID,
		StepID: rec.id, Tool: rec.tool, Status: rec.status, Duration: rec.end.Sub(rec.started),
		Error: rec.err, AllowFailure: rec.allowFailure}
	if rec.cond != nil {
		ev.Condition = strconv.FormatBool(rec.cond.passed)
	}
	r.e.publish(ev)
}
