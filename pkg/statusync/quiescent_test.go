package statusync_test

import (
	"errors"
	"log/slog"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/musterd/musterd/pkg/events"
	"github.com/musterd/musterd/pkg/statusync"
)

// On a fake clock, Quiescent says when the store has no write queued or in
// progress, and when a failed write is retried; events carry the fake
// clock's time.
func TestStoreQuiescentFollowsWritesAndRetriesOnAFakeClock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC) // not the bubble's clock
		clk := testingclock.NewFakeClock(t0)
		w := &fakeWriter{block: make(chan struct{}), fail: func(n int) error {
			if n == 1 {
				return errors.New("disk full")
			}
			return nil
		}}
		h := startStore(t, statusync.StoreOptions{Writer: w, Logger: slog.New(slog.DiscardHandler), Clock: clk})
		defer h.stop(t)
		quiet, wake := h.store.Quiescent(t0)
		assert.True(t, quiet)
		assert.True(t, wake.IsZero())

		h.publish(events.ResourceSynced{Meta: meta("c1"), Key: gitKey, Attempt: 1})
		quiet, _ = h.store.Quiescent(t0)
		assert.False(t, quiet, "a write in progress")
		w.block <- struct{}{} // it fails: retried after RetryBaseDelay
		synctest.Wait()
		quiet, wake = h.store.Quiescent(t0)
		assert.True(t, quiet)
		assert.Equal(t, t0.Add(time.Second), wake, "the retry")
		quiet, _ = h.store.Quiescent(t0.Add(time.Second))
		assert.False(t, quiet, "the retry is due at its time")

		clk.SetTime(t0.Add(time.Second))
		synctest.Wait()
		quiet, _ = h.store.Quiescent(clk.Now())
		assert.False(t, quiet, "the retry writes")
		w.block <- struct{}{}
		synctest.Wait()
		quiet, wake = h.store.Quiescent(clk.Now())
		assert.True(t, quiet)
		assert.True(t, wake.IsZero())

		got := h.observed.Events()
		if assert.Len(t, got, 2) {
			assert.Equal(t, t0, got[0].Metadata().Time)
			assert.IsType(t, events.StatusSyncFailed{}, got[0])
			assert.Equal(t, t0.Add(time.Second), got[1].Metadata().Time)
			assert.IsType(t, events.StatusSynced{}, got[1])
		}
	})
}
