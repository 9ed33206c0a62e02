package debouncer_test

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/musterd/musterd/pkg/debouncer"
	"github.com/musterd/musterd/pkg/events"
)

// On a fake clock, Quiescent says when the debouncer's refractory periods
// end, and that one is due at its end until the timer has been handled;
// triggers carry the fake clock's time.
func TestQuiescentFollowsTheRefractoryPeriodsOnAFakeClock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		t0 := time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)
		clk := testingclock.NewFakeClock(t0)
		h := startUnsynced(t, debouncer.Options{Interval: interval, Clock: clk})
		h.publish(events.IndexSynchronized{Meta: meta("sync"), Source: events.SourceFilesystem})
		synctest.Wait()
		quiet, wake := h.deb.Quiescent(t0)
		assert.True(t, quiet)
		assert.True(t, wake.IsZero(), "no key in a refractory period")

		h.change("a", "c1")
		synctest.Wait()
		h.change("a", "c2") // pending until the period ends
		synctest.Wait()
		quiet, wake = h.deb.Quiescent(t0)
		assert.True(t, quiet)
		assert.Equal(t, t0.Add(interval), wake)
		quiet, _ = h.deb.Quiescent(t0.Add(interval))
		assert.False(t, quiet, "the period's end is due then")

		clk.SetTime(t0.Add(interval))
		synctest.Wait()
		quiet, wake = h.deb.Quiescent(clk.Now())
		assert.True(t, quiet)
		assert.Equal(t, t0.Add(2*interval), wake, "the pending change fired and started a new period")

		clk.SetTime(t0.Add(2 * interval))
		synctest.Wait()
		quiet, wake = h.deb.Quiescent(clk.Now())
		assert.True(t, quiet)
		assert.True(t, wake.IsZero(), "the quiet key is forgotten")

		got := h.take()
		require.Len(t, got, 3)
		assert.Equal(t, t0, got[1].Time, "the leading edge, at the fake clock's time")
		assert.Equal(t, events.ReasonRefractoryEnd, got[2].Reason)
		assert.Equal(t, t0.Add(interval), got[2].Time)
		assert.Equal(t, "c2", got[2].CorrelationID)
	})
}
