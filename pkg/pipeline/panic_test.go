package pipeline_test

import (
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/musterd/musterd/pkg/reconcilers"
	"github.com/musterd/musterd/pkg/statusync"
)

// A reconciler that panics on one resource: the panic is recovered and
// counted in musterd_reconcile_panics_total, that resource goes to Error
// with the panic as its error and a retry, and the pipeline goes on
// reconciling the others, before and after the retry.
func TestAPanickingReconcilerPutsItsResourceInErrorAndThePipelineGoesOn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := start(t, newScripted(t, func(c call) reconcilers.Result {
			if c.Key.Name == "boom" && c.Attempt == 1 {
				panic("index out of range [3] with length 3")
			}
			return reconcilers.Result{}
		}))
		defer h.stop()

		boom, _ := h.change("boom")
		synctest.Wait()
		st := h.status(boom)
		assert.Equal(t, statusync.StateError, st.State)
		assert.Contains(t, st.LastError, `reconciler of kind "Workflow" panicked: index out of range [3] with length 3`)
		require.NoError(t, testutil.GatherAndCompare(h.p.Registry, strings.NewReader(`
# HELP musterd_reconcile_panics_total Total number of reconciler panics.
# TYPE musterd_reconcile_panics_total counter
musterd_reconcile_panics_total 1
`), "musterd_reconcile_panics_total"))

		other, _ := h.change("other")
		synctest.Wait()
		assert.Equal(t, statusync.StateSynced, h.status(other).State, "the pipeline goes on after a panic")
		require.Len(t, h.rec.callsOf(other), 1)

		time.Sleep(time.Minute) // past the retry
		synctest.Wait()
		assert.Equal(t, statusync.StateSynced, h.status(boom).State, "the retry after the panic reconciles it")
	})
}
