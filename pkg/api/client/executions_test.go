package client_test

import (
	"context"
	"encoding/json"
	"testing"
	"testing/synctest"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/musterd/musterd/pkg/api"
	"github.com/musterd/musterd/pkg/api/apitest"
	"github.com/musterd/musterd/pkg/api/client"
	"github.com/musterd/musterd/pkg/api/types"
	"github.com/musterd/musterd/pkg/apis/muster/v1alpha1"
	"github.com/musterd/musterd/pkg/events"
	"github.com/musterd/musterd/pkg/resources"
	"github.com/musterd/musterd/pkg/workflowrun"
)

// echo answers a step's call with its arguments as JSON.
type echo struct{}

func (echo) CallTool(_ context.Context, _ string, args map[string]any, _ func(*mcp.ProgressNotificationParams)) (*mcp.CallToolResult, error) {
	data, _ := json.Marshal(args)
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(data)}}}, nil
}

func TestClientReadsExecutionsWithTheToken(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ix := resources.New()
		engine, err := workflowrun.New(workflowrun.Options{Index: ix,
			Status: func(events.Key) (v1alpha1.WorkflowStatus, bool) { return v1alpha1.WorkflowStatus{Valid: true}, true }})
		require.NoError(t, err)
		engine.SetCaller(echo{})
		docs, err := v1alpha1.DecodeFile("workflows/greet.yaml", []byte(greetWorkflow))
		require.NoError(t, err)
		ix.SetFile("workflows/greet.yaml", []resources.Doc{{Key: greetKey, Object: docs[0].Object, Hash: docs[0].Hash}}, nil, greetKey)
		res, err := engine.CallTool(context.Background(), "workflow_greet", map[string]any{"who": "ada"}, nil)
		require.NoError(t, err)
		require.False(t, res.IsError)

		f := apitest.New(t, func(o *api.Options) { o.Token = "t0ken"; o.Executions = engine })
		c := newClient(t, f, "t0ken")
		list, err := c.Executions(context.Background(), types.ExecutionQuery{Workflow: "greet"})
		require.NoError(t, err)
		require.Equal(t, 1, list.Total)
		assert.Equal(t, 50, list.Limit)
		id := list.Executions[0].ExecutionID
		exec, err := c.Execution(context.Background(), id)
		require.NoError(t, err)
		assert.Equal(t, "completed", exec.Status)
		assert.Equal(t, map[string]any{"who": "ada"}, exec.Input)
		require.Len(t, exec.Steps, 1)
		assert.Equal(t, "hello", exec.Steps[0].StepID)

		_, err = c.Execution(context.Background(), "nope")
		assert.True(t, client.IsNotFound(err))
		assert.EqualError(t, err, "execution nope: not found")
		_, err = c.Executions(context.Background(), types.ExecutionQuery{Status: "done"})
		assert.EqualError(t, err, "status must be one of the enum values: inprogress, completed, failed")
		_, err = c.Executions(context.Background(), types.ExecutionQuery{Limit: new(0)})
		assert.EqualError(t, err, "limit must be at least 1 (minimum value)", "a limit of 0 is sent, and refused by the engine")
		list, err = c.Executions(context.Background(), types.ExecutionQuery{Limit: new(1)})
		require.NoError(t, err)
		assert.Equal(t, 1, list.Limit)
		_, err = newClient(t, f, "").Executions(context.Background(), types.ExecutionQuery{})
		assert.True(t, client.IsUnauthorized(err), "executions hold tools' inputs and results")
	})
}
