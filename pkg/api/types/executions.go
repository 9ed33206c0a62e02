package types

import "time"

// Execution statuses, as muster spells them.
const (
	ExecutionInProgress = "inprogress"
	ExecutionCompleted  = "completed"
	ExecutionFailed     = "failed"
	// StepSkipped is the status of a step whose condition did not hold.
	StepSkipped = "skipped"
)

// Execution is one run of a workflow: muster's WorkflowExecution, the
// document core_workflow_execution_get answers and GET
// /api/v1/executions/{id} serves.
type Execution struct {
	ExecutionID  string         `json:"execution_id"`
	WorkflowName string         `json:"workflow_name"`
	Status       string         `json:"status"`
	StartedAt    time.Time      `json:"started_at"`
	CompletedAt  *time.Time     `json:"completed_at,omitempty"`
	DurationMs   int64          `json:"duration_ms"`
	Input        map[string]any `json:"input"`
	Result       any            `json:"result,omitempty"`
	Error        *string        `json:"error,omitempty"`
	// Steps is every step run, skipped or failed, in the order they
	// finished; nil (omitted) when include_steps is false.
	Steps []ExecutionStep `json:"steps,omitempty"`
	// Truncated says that an input or result was larger than the record's
	// bound and was replaced by a marker.
	Truncated bool `json:"truncated,omitempty"`
}

// ExecutionStep is one step of an execution: muster's
// WorkflowExecutionStep.
type ExecutionStep struct {
	StepID      string         `json:"step_id"`
	Tool        string         `json:"tool"`
	Status      string         `json:"status"`
	StartedAt   time.Time      `json:"started_at"`
	CompletedAt *time.Time     `json:"completed_at,omitempty"`
	DurationMs  int64          `json:"duration_ms"`
	Input       map[string]any `json:"input"`
	Result      any            `json:"result,omitempty"`
	Error       *string        `json:"error,omitempty"`
	StoredAs    string         `json:"stored_as,omitempty"`
}

// ExecutionSummary is an execution in a listing: muster's
// WorkflowExecutionSummary.
type ExecutionSummary struct {
	ExecutionID  string     `json:"execution_id"`
	WorkflowName string     `json:"workflow_name"`
	Status       string     `json:"status"`
	StartedAt    time.Time  `json:"started_at"`
	CompletedAt  *time.Time `json:"completed_at,omitempty"`
	DurationMs   int64      `json:"duration_ms"`
	StepCount    int        `json:"step_count"`
	Error        *string    `json:"error,omitempty"`
}

// ExecutionList is a page of executions, newest first: muster's
// ListWorkflowExecutionsResponse.
type ExecutionList struct {
	Executions []ExecutionSummary `json:"executions"`
	Total      int                `json:"total"`
	Limit      int                `json:"limit"`
	Offset     int                `json:"offset"`
	HasMore    bool               `json:"has_more"`
}

// ExecutionQuery selects a page of executions. Limits as muster's: 50 by
// default, 1 to 1000. workflowrun.CheckQuery is the one place they are
// checked; the API, the CLI and the MCP tool pass what they were given.
type ExecutionQuery struct {
	// Workflow, when set, keeps only that workflow's executions.
	Workflow string
	// Status, when set, keeps only executions in that status.
	Status string
	// Limit is the most executions in the page; nil asks for the default
	// (DefaultExecutionLimit). A limit given is checked as given: 0 is an
	// error, not the default.
	Limit *int
	// Offset is how many of the newest matching executions to skip.
	Offset int
}

// Execution listing limits.
const (
	DefaultExecutionLimit = 50
	MaxExecutionLimit     = 1000
)
