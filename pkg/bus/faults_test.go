package bus_test

import (
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/musterd/musterd/pkg/bus"
	"github.com/musterd/musterd/pkg/events"
)

// A subscriber that is stuck, whatever its delivery, delays neither the
// publisher nor another subscriber by any virtual time, and events are
// counted as dropped only where a subscriber chose lossy delivery: the
// coalescing one folds (and counts coalesced), the unbounded one keeps
// every event.
func TestAStuckSubscriberOfAnyDeliveryDelaysNobodyAndOnlyLossyDrops(t *testing.T) {
	for _, c := range []struct {
		name                     string
		delivery                 bus.Delivery
		dropped, coalesced, kept uint64
	}{
		// 500 events on 50 keys; the first is taken by the stuck handler.
		{"coalescing", bus.Coalescing(bus.ByResourceKey), 0, 499 - 50, 50},
		{"unbounded", bus.Unbounded(), 0, 0, 499},
		{"lossy", bus.Lossy(100), 399, 0, 100},
	} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				b := started()
				defer b.Close()
				release := make(chan struct{})
				stuck, err := bus.Subscribe(b, "stuck", c.delivery, func(events.ResourceChanged) { <-release })
				require.NoError(t, err)
				var otherAt []time.Time
				_, err = bus.Subscribe(b, "other", bus.Unbounded(), func(events.ResourceChanged) { otherAt = append(otherAt, time.Now()) })
				require.NoError(t, err)

				t0 := time.Now()
				bus.Publish(b, changed("k0"))
				synctest.Wait() // the stuck handler holds the first event
				for i := 1; i < 500; i++ {
					bus.Publish(b, changed(fmt.Sprint("k", i%50)))
				}
				assert.Equal(t, t0, time.Now(), "publishing waited for the stuck subscriber")
				synctest.Wait()
				require.Len(t, otherAt, 500, "the other subscriber was held up")
				for _, at := range otherAt {
					assert.Equal(t, t0, at, "the other subscriber was delayed")
				}
				assert.EqualValues(t, c.kept, stuck.Pending())

				var dropped, coalesced uint64
				otherListed := false
				for _, h := range b.Stats().Handlers {
					switch h.Subscriber {
					case "stuck":
						dropped, coalesced = h.Dropped, h.Coalesced
					case "other":
						otherListed = true
						assert.Zero(t, h.Dropped, "the unbounded subscriber dropped")
					}
				}
				assert.True(t, otherListed, "the unbounded subscriber's counters are listed")
				assert.Equal(t, c.dropped, dropped, "dropped")
				assert.Equal(t, c.coalesced, coalesced, "coalesced")
				close(release)
			})
		})
	}
}
