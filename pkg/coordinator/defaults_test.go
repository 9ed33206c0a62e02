package coordinator_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/musterd/musterd/pkg/coordinator"
	"github.com/musterd/musterd/pkg/events"
	"github.com/musterd/musterd/pkg/reconcilers"
)

// The zero Options run two workers: two keys at once, a third waits.
func TestZeroOptionsRunTwoWorkers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake(kind)
		f.reconcile = func(context.Context, reconcilers.Request) reconcilers.Result {
			time.Sleep(time.Second)
			return reconcilers.Result{}
		}
		h := run(t, coordinator.Options{}, f)

		h.trigger(events.ReasonChange, "corr-1", keyA, keyB, keyC)
		time.Sleep(time.Hour)
		synctest.Wait()

		calls := f.SortedCalls()
		assert.Equal(t, []time.Duration{0, 0, time.Second}, []time.Duration{calls[0].At, calls[1].At, calls[2].At},
			"the default is two workers")
		f.mu.Lock()
		defer f.mu.Unlock()
		assert.Equal(t, 2, f.maxRunning)
	})
}

// With the default BackoffBase (1s) and BackoffMax (5m), the retry delay
// doubles from 1s and stops growing at 5m.
func TestDefaultBackoffGrowsFromOneSecondAndIsCappedAtFiveMinutes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake(kind)
		f.reconcile = failing
		h := run(t, coordinator.Options{Jitter: -1, MaxRetries: 12, ResyncPeriod: -1}, f)

		h.trigger(events.ReasonChange, "corr-1", keyA)
		time.Sleep(24 * time.Hour)
		synctest.Wait()

		var delays []time.Duration
		calls := f.Calls()
		for i := 1; i < len(calls); i++ {
			delays = append(delays, calls[i].At-calls[i-1].At)
		}
		s := time.Second
		assert.Equal(t, []time.Duration{1 * s, 2 * s, 4 * s, 8 * s, 16 * s, 32 * s, 64 * s, 128 * s, 256 * s,
			5 * time.Minute, 5 * time.Minute, 5 * time.Minute}, delays)
	})
}
