package workflowrun_test

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/musterd/musterd/pkg/api/types"
	"github.com/musterd/musterd/pkg/apis/muster/v1alpha1"
	"github.com/musterd/musterd/pkg/coretools"
	"github.com/musterd/musterd/pkg/events"
	"github.com/musterd/musterd/pkg/resources"
	"github.com/musterd/musterd/pkg/workflowrun"
)

// gate is a Caller whose calls wait until released, counting how many are
// in flight: the one fake of the bound's test.
type gate struct {
	mu       sync.Mutex
	inflight int
	peak     int
	release  chan struct{}
}

func (g *gate) CallTool(ctx context.Context, _ string, args map[string]any, _ func(*mcp.ProgressNotificationParams)) (*mcp.CallToolResult, error) {
	g.mu.Lock()
	g.inflight++
	g.peak = max(g.peak, g.inflight)
	g.mu.Unlock()
	defer func() { g.mu.Lock(); g.inflight--; g.mu.Unlock() }()
	select {
	case <-g.release:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	data, _ := json.Marshal(args)
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(data)}}}, nil
}

func (g *gate) running() int { g.mu.Lock(); defer g.mu.Unlock(); return g.inflight }

// bounded declares src and returns an engine over g.
func bounded(t *testing.T, g *gate, opts workflowrun.Options, src string) *workflowrun.Engine {
	t.Helper()
	docs, err := v1alpha1.DecodeFile("workflows/w.yaml", []byte(src))
	require.NoError(t, err)
	require.NoError(t, docs[0].Err)
	ix := resources.New()
	k := docs[0].Key()
	ix.SetFile("workflows/w.yaml", []resources.Doc{{Key: k, Object: docs[0].Object, Hash: docs[0].Hash}}, nil, k)
	opts.Index = ix
	opts.Status = func(events.Key) (v1alpha1.WorkflowStatus, bool) { return v1alpha1.WorkflowStatus{Valid: true}, true }
	e, err := workflowrun.New(opts)
	require.NoError(t, err)
	e.SetCaller(g)
	return e
}

func TestParallelAndForEachHonourTheirConcurrencyBounds(t *testing.T) {
	for _, tc := range []struct {
		name  string
		opts  workflowrun.Options
		spec  string
		bound int
		calls int
	}{{
		name: "parallel", opts: workflowrun.Options{Concurrency: 2}, bound: 2, calls: 5,
		spec: "  steps:\n    - id: fan\n      parallel:\n" +
			"        - {id: a, tool: x_t}\n        - {id: b, tool: x_t}\n        - {id: c, tool: x_t}\n        - {id: d, tool: x_t}\n        - {id: e, tool: x_t}\n",
	}, {
		name: "forEach", opts: workflowrun.Options{ForEachConcurrency: 3}, bound: 3, calls: 7,
		spec: "  steps:\n    - id: each\n      forEach:\n        items: \"{{ list 1 2 3 4 5 6 7 }}\"\n        steps: [{id: s, tool: x_t}]\n",
	}, {
		name: "forEach in order", opts: workflowrun.Options{}, bound: 1, calls: 3,
		spec: "  steps:\n    - id: each\n      forEach:\n        items: \"{{ list 1 2 3 }}\"\n        steps: [{id: s, tool: x_t}]\n",
	}} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				g := &gate{release: make(chan struct{})}
				e := bounded(t, g, tc.opts, wf("w", tc.spec))
				done := make(chan *mcp.CallToolResult)
				go func() {
					res, _ := e.CallTool(context.Background(), "workflow_w", nil, nil)
					done <- res
				}()
				for released := 0; ; released++ {
					synctest.Wait()
					select {
					case res := <-done:
						require.False(t, res.IsError, res.Content[0].(*mcp.TextContent).Text)
						assert.Equal(t, tc.calls, released)
						assert.Equal(t, tc.bound, g.peak)
						return
					default:
					}
					assert.Equal(t, min(tc.bound, tc.calls-released), g.running(), "every slot is taken while calls wait")
					g.release <- struct{}{}
				}
			})
		})
	}
}

// A run in progress shows the steps it has finished so far; the one
// running is not shown until it ends.
func TestARunInProgressShowsItsFinishedSteps(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := &gate{release: make(chan struct{})}
		e := bounded(t, g, workflowrun.Options{}, "apiVersion: muster.giantswarm.io/v1alpha1\nkind: Workflow\nmetadata:\n  name: w\nspec:\n"+
			"  steps:\n    - {id: first, tool: x_a}\n    - {id: second, tool: x_b}\n")
		done := make(chan struct{})
		go func() {
			defer close(done)
			_, _ = e.CallTool(context.Background(), "workflow_w", nil, nil)
		}()
		g.release <- struct{}{} // the first step's call returns
		synctest.Wait()         // the second waits at the gate
		require.Equal(t, 1, g.running())

		list, err := e.Executions(types.ExecutionQuery{})
		require.NoError(t, err)
		require.Len(t, list.Executions, 1)
		id := list.Executions[0].ExecutionID
		exec, ok := e.Execution(id)
		require.True(t, ok)
		assert.Equal(t, "inprogress", string(exec.Status))
		require.Len(t, exec.Steps, 1)
		assert.Equal(t, "first", exec.Steps[0].StepID)
		assert.Equal(t, "completed", exec.Steps[0].Status)

		res, err := executionTools(t, e).CallTool(context.Background(), coretools.ToolExecutionGet, map[string]any{"execution_id": id}, nil)
		require.NoError(t, err)
		assert.Contains(t, res.Content[0].(*mcp.TextContent).Text, `"step_id":"first"`, "the MCP tool shows it too")

		g.release <- struct{}{}
		<-done
		exec, _ = e.Execution(id)
		require.Len(t, exec.Steps, 2, "the record at the end has every step")
	})
}
