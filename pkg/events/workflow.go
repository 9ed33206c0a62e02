package events

import "time"

// Stable type names of the workflow execution events.
const (
	TypeWorkflowExecutionStarted  = "WorkflowExecutionStarted"
	TypeWorkflowExecutionFinished = "WorkflowExecutionFinished"
)

// WorkflowExecutionStarted says a run of a workflow began. The workflow
// engine publishes it (through the wiring: the engine never imports the
// bus).
type WorkflowExecutionStarted struct {
	Meta
	// Key is the workflow's.
	Key         Key    `json:"key"`
	ExecutionID string `json:"executionId"`
}

func (WorkflowExecutionStarted) EventType() string  { return TypeWorkflowExecutionStarted }
func (e WorkflowExecutionStarted) ResourceKey() Key { return e.Key }

// WorkflowExecutionFinished says a run of a workflow ended.
type WorkflowExecutionFinished struct {
	Meta
	Key         Key    `json:"key"`
	ExecutionID string `json:"executionId"`
	// Status is "completed" or "failed".
	Status   string        `json:"status"`
	Duration time.Duration `json:"duration"`
	// Error says why a failed run failed, redacted.
	Error string `json:"error,omitempty"`
}

func (WorkflowExecutionFinished) EventType() string  { return TypeWorkflowExecutionFinished }
func (e WorkflowExecutionFinished) ResourceKey() Key { return e.Key }
