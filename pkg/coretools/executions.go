package coretools

import (
	"context"
	"fmt"
	"math"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/musterd/musterd/pkg/api/types"
	"github.com/musterd/musterd/pkg/tooldef"
	"github.com/musterd/musterd/pkg/workflowrun"
)

// Names of the execution tools.
const (
	ToolExecutionList = "core_workflow_execution_list"
	ToolExecutionGet  = "core_workflow_execution_get"
)

// Executions are the workflow executions the engine keeps
// (*workflowrun.Engine).
type Executions interface {
	// Executions answers a query, checked by workflowrun.CheckQuery.
	Executions(q types.ExecutionQuery) (types.ExecutionList, error)
	// Execution returns the execution id, a run in progress with the
	// steps it has finished.
	Execution(id string) (*types.Execution, bool)
}

// executionTools are core_workflow_execution_list and _get, with muster's
// arguments and texts: their calls check their own arguments.
func (p *Provider) executionTools() []*tooldef.Tool {
	return []*tooldef.Tool{
		{Name: ToolExecutionList, Description: "List workflow executions", SelfChecked: true, Args: []tooldef.Arg{
			arg("workflow_name", tooldef.String, "Filter by workflow name"),
			withSchema("status", tooldef.String, map[string]any{"type": "string", "description": "Filter by execution status",
				"enum": []any{types.ExecutionInProgress, types.ExecutionCompleted, types.ExecutionFailed}}),
			withSchema("limit", tooldef.Number, map[string]any{"type": "number", "description": "Maximum number of executions to return",
				"default": types.DefaultExecutionLimit, "minimum": 1, "maximum": types.MaxExecutionLimit}),
			withSchema("offset", tooldef.Number, map[string]any{"type": "number", "description": "Number of executions to skip", "default": 0, "minimum": 0}),
		}, Call: p.executionList},
		{Name: ToolExecutionGet, Description: "Get workflow execution details", SelfChecked: true, Args: []tooldef.Arg{
			required(arg("execution_id", tooldef.String, "ID of the execution")),
			withSchema("include_steps", tooldef.Boolean, map[string]any{"type": "boolean", "description": "Include step details", "default": true}),
			arg("step_id", tooldef.String, "Get specific step details"),
		}, Call: p.executionGet},
	}
}

// intArg reads a whole number argument.
func intArg(args tooldef.Args, name string) (int, bool, error) {
	v, ok := args[name]
	if !ok || v == nil {
		return 0, false, nil
	}
	f, isNum := 0.0, false
	switch n := v.(type) {
	case float64:
		f, isNum = n, true
	case int:
		f, isNum = float64(n), true
	case int64:
		f, isNum = float64(n), true
	}
	if !isNum || f != math.Trunc(f) || math.Abs(f) > 1e9 {
		return 0, true, fmt.Errorf("%s must be a number", name)
	}
	return int(f), true, nil
}

func (p *Provider) executionList(_ context.Context, args tooldef.Args) (*mcp.CallToolResult, error) {
	q := types.ExecutionQuery{}
	if v, ok := args["workflow_name"].(string); ok {
		q.Workflow = v
	}
	if v, ok := args["status"]; ok {
		s, _ := v.(string)
		if s == "" {
			return tooldef.Error("status must be one of the enum values: inprogress, completed, failed"), nil
		}
		q.Status = s
	}
	limit, set, err := intArg(args, "limit")
	if err != nil {
		return tooldef.Error(err.Error()), nil
	}
	if set {
		q.Limit = &limit
	}
	if q.Offset, _, err = intArg(args, "offset"); err != nil {
		return tooldef.Error(err.Error()), nil
	}
	list, err := p.opts.Executions.Executions(q)
	if err != nil {
		return tooldef.Error(err.Error()), nil
	}
	return tooldef.JSON(list)
}

func (p *Provider) executionGet(_ context.Context, args tooldef.Args) (*mcp.CallToolResult, error) {
	id, _ := args["execution_id"].(string)
	if id == "" {
		return tooldef.Error("execution_id is required"), nil
	}
	includeSteps := true
	if v, ok := args["include_steps"]; ok {
		b, isBool := v.(bool)
		if !isBool {
			return tooldef.Error("include_steps must be a boolean value"), nil
		}
		includeSteps = b
	}
	stepID := ""
	if v, ok := args["step_id"]; ok {
		switch s := v.(type) {
		case nil:
			return tooldef.Error("step_id cannot be null"), nil
		case string:
			if s == "" {
				return tooldef.Error("step_id is invalid: cannot be empty"), nil
			}
			stepID = s
		default:
			return tooldef.Error("step_id must be a string"), nil
		}
	}
	exec, ok := p.opts.Executions.Execution(id)
	if !ok {
		return tooldef.Error(fmt.Sprintf("Failed to get execution: execution %s not found", id)), nil
	}
	view, err := workflowrun.View(exec, includeSteps, stepID)
	if err != nil {
		return tooldef.Error("Failed to get execution: " + err.Error()), nil
	}
	return tooldef.JSON(view)
}
