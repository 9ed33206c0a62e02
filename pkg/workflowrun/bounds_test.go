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

	"github.com/musterd/musterd/pkg/apis/muster/v1alpha1"
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
