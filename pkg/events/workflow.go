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

// Stable type names of the workflow step events and of a definition's
// validation on request.
const (
	TypeWorkflowStepStarted  = "WorkflowStepStarted"
	TypeWorkflowStepFinished = "WorkflowStepFinished"
	TypeDefinitionValidated  = "DefinitionValidated"
)

// Outcomes of WorkflowStepFinished.
const (
	StepCompleted = "completed"
	StepFailed    = "failed"
	StepSkipped   = "skipped"
)

// WorkflowStepStarted says a step of a run is about to call its tool: its
// condition, if it has one, passed, and its arguments rendered. The
// workflow engine publishes it through the wiring.
type WorkflowStepStarted struct {
	Meta
	// Key is the workflow's.
	Key         Key    `json:"key"`
	ExecutionID string `json:"executionId"`
	StepID      string `json:"stepId"`
	Tool        string `json:"tool"`
	// Condition is "true" when the step had a condition (which passed),
	// empty when it had none.
	Condition string `json:"condition,omitempty"`
}

func (WorkflowStepStarted) EventType() string  { return TypeWorkflowStepStarted }
func (e WorkflowStepStarted) ResourceKey() Key { return e.Key }

// WorkflowStepFinished says a step of a run ended: completed, failed, or
// skipped by its condition (then no WorkflowStepStarted came before it).
type WorkflowStepFinished struct {
	Meta
	Key         Key    `json:"key"`
	ExecutionID string `json:"executionId"`
	StepID      string `json:"stepId"`
	Tool        string `json:"tool"`
	// Status is StepCompleted, StepFailed or StepSkipped.
	Status   string        `json:"status"`
	Duration time.Duration `json:"duration"`
	// Error says why a failed step failed, redacted.
	Error string `json:"error,omitempty"`
	// AllowFailure: the step may fail without failing the run.
	AllowFailure bool `json:"allowFailure,omitempty"`
	// Condition is "false" for a step skipped by its condition.
	Condition string `json:"condition,omitempty"`
}

func (WorkflowStepFinished) EventType() string  { return TypeWorkflowStepFinished }
func (e WorkflowStepFinished) ResourceKey() Key { return e.Key }

// DefinitionValidated says a definition was checked on request (a core
// tool's validate, or the check before its create or update), whether or
// not it was then written. A definition refused here never reaches the
// watchers, so this is the only trace of it.
type DefinitionValidated struct {
	Meta
	Key Key `json:"key"`
	// Request is what asked: "validate", "create" or "update".
	Request string `json:"request"`
	// Error is why the definition is invalid, redacted; empty when valid.
	Error string `json:"error,omitempty"`
}

func (DefinitionValidated) EventType() string  { return TypeDefinitionValidated }
func (e DefinitionValidated) ResourceKey() Key { return e.Key }
