package coordinator_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/musterd/musterd/pkg/coordinator"
	"github.com/musterd/musterd/pkg/events"
	"github.com/musterd/musterd/pkg/reconcilers"
)

// On a fake clock, Quiescent says when the coordinator has nothing due and
// when it acts next: a retry at exactly its backoff, the resync ticker and
// the resync pacing. synctest.Wait only brings the goroutines to rest; the
// times are the fake clock's.
func TestQuiescentReportsWhatIsDueOnAFakeClock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		t0 := time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)
		clk := testingclock.NewFakeClock(t0)
		rec := newFake("MCPServer")
		release := make(chan struct{})
		fails := 1
		rec.reconcile = func(context.Context, reconcilers.Request) reconcilers.Result {
			<-release
			if fails > 0 {
				fails--
				return reconcilers.Result{Err: errors.New("boom")}
			}
			return reconcilers.Result{}
		}
		a := events.NewKey("MCPServer", "", "a")
		rec.list = func(context.Context) ([]events.Key, error) { return []events.Key{a}, nil }
		h := run(t, coordinator.Options{Clock: clk, Workers: 1, Jitter: -1, ResyncPeriod: time.Minute, ResyncQPS: 1}, rec)
		synctest.Wait()

		quiet, wake := h.c.Quiescent(t0)
		assert.True(t, quiet, "nothing triggered yet")
		assert.Equal(t, t0.Add(time.Minute), wake, "the resync ticker")

		h.trigger(events.ReasonChange, "c1", a)
		quiet, _ = h.c.Quiescent(t0)
		assert.False(t, quiet, "a reconcile in flight")
		release <- struct{}{} // it fails: a retry after BackoffBase
		synctest.Wait()
		quiet, wake = h.c.Quiescent(t0)
		assert.True(t, quiet)
		assert.Equal(t, t0.Add(time.Second), wake, "the retry")
		quiet, _ = h.c.Quiescent(t0.Add(time.Second))
		assert.False(t, quiet, "at the retry's time, the retry is due")
		failed := eventsOf[events.ResourceFailed](h)
		require.Len(t, failed, 1)
		assert.Equal(t, t0, failed[0].Time, "stamped with the fake clock")
		assert.Equal(t, t0.Add(time.Second), failed[0].NextRetry)

		clk.SetTime(t0.Add(time.Second))
		synctest.Wait()
		quiet, _ = h.c.Quiescent(clk.Now())
		assert.False(t, quiet, "the retry runs")
		release <- struct{}{}
		synctest.Wait()
		quiet, wake = h.c.Quiescent(clk.Now())
		assert.True(t, quiet)
		assert.Equal(t, t0.Add(time.Minute), wake)
		require.Len(t, rec.Calls(), 2)

		// The resync: one key now (the burst of one), reconciled.
		clk.SetTime(t0.Add(time.Minute))
		synctest.Wait()
		release <- struct{}{}
		synctest.Wait()
		quiet, wake = h.c.Quiescent(clk.Now())
		assert.True(t, quiet)
		assert.Equal(t, t0.Add(2*time.Minute), wake, "the next tick")
		require.Len(t, rec.Calls(), 3)

		// A second pass within the second: the pacing waits for the fake
		// clock, and says until when.
		h.c.Resync()
		synctest.Wait()
		quiet, wake = h.c.Quiescent(clk.Now())
		assert.True(t, quiet, "the pass waits for its pacing")
		assert.Equal(t, t0.Add(time.Minute+time.Second), wake, "one key a second")
		clk.SetTime(wake)
		synctest.Wait()
		release <- struct{}{}
		synctest.Wait()
		quiet, wake = h.c.Quiescent(clk.Now())
		assert.True(t, quiet)
		assert.Equal(t, t0.Add(2*time.Minute), wake)
		calls := rec.Calls()
		require.Len(t, calls, 4)
		assert.Equal(t, 4, len(eventsOf[events.ReconciliationStarted](h)))
		var synced []time.Time
		for _, s := range eventsOf[events.ResourceSynced](h) {
			synced = append(synced, s.Time)
		}
		assert.Equal(t, []time.Time{t0.Add(time.Second), t0.Add(time.Minute), t0.Add(time.Minute + time.Second)}, synced,
			"the retry, the resync and the paced pass, each stamped with the fake clock")
	})
}
