package workflowrun

import (
	"fmt"

	"github.com/musterd/musterd/pkg/api/types"
)

// Executions answers a query of the executions kept (for the HTTP API and
// core_workflow_execution_list).
func (e *Engine) Executions(q types.ExecutionQuery) (types.ExecutionList, error) {
	if err := CheckQuery(&q); err != nil {
		return types.ExecutionList{}, err
	}
	return e.store.List(q), nil
}

// Execution returns the execution id (for the HTTP API and
// core_workflow_execution_get).
func (e *Engine) Execution(id string) (*types.Execution, bool) {
	exec, ok := e.store.Get(id)
	if ok && exec.Status == types.ExecutionInProgress {
		// A run in progress shows the steps it has finished so far, bounded
		// as the final record will be; its record on disk gets them at the end.
		if r, running := e.running.Load(id); running {
			exec.Steps = r.(*runner).executionSteps()
			bound(exec, e.opts.MaxRecordBytes)
		}
	}
	return exec, ok
}

// CheckQuery validates q by muster's rules, with muster's messages, each
// naming the field, and fills in the default limit when none was given.
// It is the one place a query is checked: the API, the CLI and the
// execution tools (package coretools) pass on what they were given.
func CheckQuery(q *types.ExecutionQuery) error {
	switch q.Status {
	case "", types.ExecutionInProgress, types.ExecutionCompleted, types.ExecutionFailed:
	default:
		return fmt.Errorf("status must be one of the enum values: inprogress, completed, failed")
	}
	if q.Limit == nil {
		q.Limit = new(types.DefaultExecutionLimit)
	}
	if *q.Limit < 1 {
		return fmt.Errorf("limit must be at least 1 (minimum value)")
	}
	if *q.Limit > types.MaxExecutionLimit {
		return fmt.Errorf("limit must be at most %d (maximum value)", types.MaxExecutionLimit)
	}
	if q.Offset < 0 {
		return fmt.Errorf("offset must be at least 0 (minimum value)")
	}
	return nil
}

// View is muster's answer to core_workflow_execution_get: with stepID,
// the execution with that step alone (and its input only when the step
// failed): the first step with that id, else the one whose result is kept
// under that name (a forEach iteration's <id>_<index>); without steps, the execution without them and its result
// without steps and template_vars; else the whole execution.
func View(exec *types.Execution, includeSteps bool, stepID string) (*types.Execution, error) {
	if stepID != "" {
		for _, s := range exec.Steps {
			if s.StepID != stepID {
				continue
			}
			return stepView(exec, s), nil
		}
		// A forEach iteration's step by the name its result is kept
		// under: <id>_<index>.
		for _, s := range exec.Steps {
			if s.StoredAs == stepID {
				return stepView(exec, s), nil
			}
		}
		return nil, fmt.Errorf("step %s not found in execution %s", stepID, exec.ExecutionID)
	}
	if includeSteps {
		return exec, nil
	}
	v := *exec
	v.Steps = nil
	if m, ok := exec.Result.(map[string]any); ok {
		r := make(map[string]any, len(m))
		for k, val := range m {
			if k != "steps" && k != "template_vars" {
				r[k] = val
			}
		}
		v.Result = r
	}
	return &v, nil
}

// stepView is the execution with step s alone: no result, and the input
// and error only when s failed (muster's).
func stepView(exec *types.Execution, s types.ExecutionStep) *types.Execution {
	v := *exec
	v.Result, v.Error, v.Input = nil, nil, map[string]any{}
	if s.Status == types.ExecutionFailed {
		v.Error, v.Input = s.Error, exec.Input
	}
	v.Steps = []types.ExecutionStep{s}
	return &v
}
