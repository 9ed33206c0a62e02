package workflowrun_test

import (
	"context"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/musterd/musterd/pkg/apis/muster/v1alpha1"
	"github.com/musterd/musterd/pkg/events"
	"github.com/musterd/musterd/pkg/resources"
	"github.com/musterd/musterd/pkg/workflowrun"
)

// unjudged declares a workflow w whose verdict is known only once *known
// is set, and returns an engine over it.
func unjudged(t *testing.T, known *atomic.Bool, opts workflowrun.Options) *workflowrun.Engine {
	t.Helper()
	docs, err := v1alpha1.DecodeFile("workflows/w.yaml", []byte(wf("w", "  steps:\n    - {id: s, tool: x_t}\n")))
	require.NoError(t, err)
	ix := resources.New()
	k := docs[0].Key()
	ix.SetFile("workflows/w.yaml", []resources.Doc{{Key: k, Object: docs[0].Object, Hash: docs[0].Hash}}, nil, k)
	opts.Index = ix
	opts.Status = func(events.Key) (v1alpha1.WorkflowStatus, bool) {
		return v1alpha1.WorkflowStatus{Valid: true}, known.Load()
	}
	e, err := workflowrun.New(opts)
	require.NoError(t, err)
	e.SetCaller(echoCaller{})
	return e
}

// A workflow called right after it was declared, before the reconciler's
// verdict (muster's clients call one right after core_workflow_create,
// which muster answers once the workflow is in place), runs once the
// verdict arrives, rather than failing "not validated yet".
func TestACallBeforeTheFirstVerdictWaitsForIt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var known atomic.Bool
		e := unjudged(t, &known, workflowrun.Options{})
		done := make(chan *mcp.CallToolResult, 1)
		go func() {
			res, _ := e.CallTool(context.Background(), "workflow_w", nil, nil)
			done <- res
		}()
		time.Sleep(time.Second)
		synctest.Wait()
		require.Empty(t, done, "the call waits for the verdict")
		e.RefreshWorkflows("other")
		synctest.Wait()
		require.Empty(t, done, "another workflow's verdict does not end the wait")

		known.Store(true)
		e.RefreshWorkflows("w")
		synctest.Wait()
		require.Len(t, done, 1)
		res := <-done
		assert.False(t, res.IsError, res.Content[0].(*mcp.TextContent).Text)
	})
}

// The wait is bounded by Options.VerdictWait, and by the caller's context.
func TestTheWaitForAVerdictIsBounded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var known atomic.Bool
		e := unjudged(t, &known, workflowrun.Options{VerdictWait: 3 * time.Second})
		start := time.Now()
		res, err := e.CallTool(context.Background(), "workflow_w", nil, nil)
		require.NoError(t, err)
		assert.True(t, res.IsError)
		assert.Equal(t, "workflow w is not available (not validated yet)", res.Content[0].(*mcp.TextContent).Text)
		assert.Equal(t, 3*time.Second, time.Since(start))

		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		start = time.Now()
		res, err = e.CallTool(ctx, "workflow_w", nil, nil)
		require.NoError(t, err)
		assert.True(t, res.IsError)
		assert.Equal(t, time.Second, time.Since(start))
	})
}
