package workflowrun

import (
	"fmt"
	"math"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/musterd/musterd/pkg/api/types"
)

// executionTools are core_workflow_execution_list and _get, with muster's
// arguments.
func executionTools() []*mcp.Tool {
	return []*mcp.Tool{
		{Name: ToolExecutionList, Description: "List workflow executions", InputSchema: map[string]any{
			"type": "object",
			"properties": map[string]any{
				"workflow_name": map[string]any{"type": "string", "description": "Filter by workflow name"},
				"status": map[string]any{"type": "string", "description": "Filter by execution status",
					"enum": []any{types.ExecutionInProgress, types.ExecutionCompleted, types.ExecutionFailed}},
				"limit": map[string]any{"type": "number", "description": "Maximum number of executions to return",
					"default": types.DefaultExecutionLimit, "minimum": 1, "maximum": types.MaxExecutionLimit},
				"offset": map[string]any{"type": "number", "description": "Number of executions to skip", "default": 0, "minimum": 0},
			},
		}},
		{Name: ToolExecutionGet, Description: "Get workflow execution details", InputSchema: map[string]any{
			"type": "object",
			"properties": map[string]any{
				"execution_id":  map[string]any{"type": "string", "description": "ID of the execution"},
				"include_steps": map[string]any{"type": "boolean", "description": "Include step details", "default": true},
				"step_id":       map[string]any{"type": "string", "description": "Get specific step details"},
			},
			"required": []any{"execution_id"},
		}},
	}
}

// Executions answers a query of the executions kept (for the HTTP API).
func (e *Engine) Executions(q types.ExecutionQuery) (types.ExecutionList, error) {
	if err := CheckQuery(&q); err != nil {
		return types.ExecutionList{}, err
	}
	return e.store.List(q), nil
}

// Execution returns the execution id (for the HTTP API).
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
// execution tools pass on what they were given.
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

// intArg reads a whole number argument.
func intArg(args map[string]any, name string) (int, bool, error) {
	v, ok := args[name]
	if !ok || v == nil {
		return 0, false, nil
	}
	f, isNum := number(v)
	if !isNum || f != math.Trunc(f) || math.Abs(f) > 1e9 {
		return 0, true, fmt.Errorf("%s must be a number", name)
	}
	return int(f), true, nil
}

func (e *Engine) executionList(args map[string]any) *mcp.CallToolResult {
	q := types.ExecutionQuery{}
	if v, ok := args["workflow_name"].(string); ok {
		q.Workflow = v
	}
	if v, ok := args["status"]; ok {
		s, _ := v.(string)
		if s == "" {
			return textResult("status must be one of the enum values: inprogress, completed, failed", true)
		}
		q.Status = s
	}
	limit, set, err := intArg(args, "limit")
	if err != nil {
		return textResult(err.Error(), true)
	}
	if set {
		q.Limit = &limit
	}
	if q.Offset, _, err = intArg(args, "offset"); err != nil {
		return textResult(err.Error(), true)
	}
	list, err := e.Executions(q)
	if err != nil {
		return textResult(err.Error(), true)
	}
	return jsonResult(list, false)
}

func (e *Engine) executionGet(args map[string]any) *mcp.CallToolResult {
	id, _ := args["execution_id"].(string)
	if id == "" {
		return textResult("execution_id is required", true)
	}
	includeSteps := true
	if v, ok := args["include_steps"]; ok {
		b, isBool := v.(bool)
		if !isBool {
			return textResult("include_steps must be a boolean value", true)
		}
		includeSteps = b
	}
	stepID := ""
	if v, ok := args["step_id"]; ok {
		switch s := v.(type) {
		case nil:
			return textResult("step_id cannot be null", true)
		case string:
			if s == "" {
				return textResult("step_id is invalid: cannot be empty", true)
			}
			stepID = s
		default:
			return textResult("step_id must be a string", true)
		}
	}
	exec, ok := e.Execution(id)
	if !ok {
		return textResult(fmt.Sprintf("Failed to get execution: execution %s not found", id), true)
	}
	view, err := View(exec, includeSteps, stepID)
	if err != nil {
		return textResult("Failed to get execution: "+err.Error(), true)
	}
	return jsonResult(view, false)
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
