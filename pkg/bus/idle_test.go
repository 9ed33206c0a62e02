package bus_test

import (
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/musterd/musterd/pkg/bus"
	"github.com/musterd/musterd/pkg/events"
)

// Idle holds only once every event put into a mailbox has been handled and
// the OnIdle after it has run, whether the event was queued, coalesced or
// dropped; Progress moves with every put and every handled batch.
func TestIdleAndProgressFollowEveryDelivery(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := bus.New(bus.Options{})
		release := make(chan struct{})
		_, err := b.Subscribe(bus.SubscriberOptions{
			Name:     "slow",
			Delivery: bus.Lossy(1),
			Handlers: []bus.Handler{bus.On(func(events.ResourceChanged) { <-release })},
			OnIdle:   func() { <-release },
		})
		require.NoError(t, err)
		assert.True(t, b.Idle(), "nothing published")

		b.Publish(changed("held"))
		assert.False(t, b.Idle(), "an event held by the start barrier")
		b.Start()
		synctest.Wait()
		assert.False(t, b.Idle(), "the handler runs")

		before := b.Progress()
		b.Publish(changed("queued"))
		b.Publish(changed("dropped")) // the mailbox holds one
		assert.Equal(t, before+2, b.Progress(), "two puts")
		assert.False(t, b.Idle())

		release <- struct{}{} // "held" handled
		synctest.Wait()
		release <- struct{}{} // "queued" handled; OnIdle runs
		synctest.Wait()
		assert.False(t, b.Idle(), "OnIdle still runs")
		mid := b.Progress()
		release <- struct{}{}
		synctest.Wait()
		assert.True(t, b.Idle(), "the dropped event is not waited for")
		assert.Equal(t, mid+1, b.Progress(), "one batch handled")
		b.Close()
	})
}
