package coordinator_test

import (
	"context"
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/musterd/musterd/pkg/coordinator"
	"github.com/musterd/musterd/pkg/events"
	"github.com/musterd/musterd/pkg/reconcilers"
)

// A newly elected leader reconciles all of its 10,000 resources at the
// instant it is elected, not paced at ResyncQPS (100 keys/s: 100 s), and
// prunes like a pass; the passes after it are paced again.
func TestReconcileAllEnqueuesEveryListedKeyAtOnceThenPrunes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const n = 10_000
		listed := make([]events.Key, n)
		for i := range listed {
			listed[i] = events.NewKey(kind, "default", fmt.Sprintf("k%05d", i))
		}
		f := newFake(kind)
		f.list = func(context.Context) ([]events.Key, error) { return listed, nil }
		// gone failed for good before the election and is listed no more:
		// the pass drops its tombstone.
		gone := events.NewKey(kind, "default", "gone")
		f.reconcile = func(_ context.Context, req reconcilers.Request) reconcilers.Result {
			if req.Key == gone {
				return reconcilers.Result{Err: errBoom}
			}
			return reconcilers.Result{}
		}
		h := run(t, coordinator.Options{Jitter: -1, MaxRetries: -1, ResyncPeriod: -1}, f) // default ResyncQPS 100
		h.trigger(events.ReasonChange, "before", gone)
		synctest.Wait()
		require.Len(t, f.Calls(), 1)

		time.Sleep(time.Minute)
		elected := time.Minute
		h.c.ReconcileAll()
		synctest.Wait()

		calls := f.Calls()[1:]
		require.Equal(t, n, len(calls), "every listed key reconciled at the election instant")
		seen := map[events.Key]bool{}
		for _, c := range calls {
			require.Equal(t, elected, c.At, "key %s paced", c.Req.Key)
			seen[c.Req.Key] = true
		}
		assert.Len(t, seen, n, "each key once")
		assert.Equal(t, []time.Duration{elected}, f.Lists(), "one listing")
		assert.Zero(t, h.c.TrackedKeys(), "the tombstone of a key listed no more is pruned")

		// The next pass is an ordinary one, paced at 100 keys a second.
		h.c.Resync()
		time.Sleep(time.Hour)
		synctest.Wait()
		calls = f.Calls()[1+n:]
		require.Equal(t, n, len(calls))
		assert.Equal(t, elected, calls[0].At)
		assert.Equal(t, elected+(n-100)*time.Second/100, calls[n-1].At, "a burst of 100, then 100 keys a second")
	})
}
