package bus_test

import (
	"fmt"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/musterd/musterd/pkg/bus"
	"github.com/musterd/musterd/pkg/events"
)

// A lazy coalescing mailbox keeps every event while fewer than n are
// pending; at the n-th it coalesces what it holds, newest of each key in
// the order of their newest publication, and counts each event replaced;
// a drain makes it lazy again.
func TestLazyCoalescingKeepsEverythingUntilItHoldsN(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := started()
		defer b.Close()
		gate := make(chan struct{}, 1)
		got := &recorder[events.ResourceChanged]{}
		sub, err := bus.Subscribe(b, "state", bus.Coalescing(bus.ByResourceKey).Lazy(8), func(e events.ResourceChanged) {
			if e.Key.Name == "block" {
				<-gate
			}
			got.add(e)
		})
		require.NoError(t, err)
		publish := func(name, version string) {
			e := changed(name)
			e.ContentHash = version
			bus.Publish(b, e)
		}
		coalesced := func() uint64 { return b.Stats().Handlers[0].Coalesced }

		publish("block", "0")
		synctest.Wait()
		for i := range 7 { // a, b, a, b, ...: 7 pending, below 8
			publish(fmt.Sprint("k", i%2), fmt.Sprint(i))
		}
		assert.Equal(t, 7, sub.Pending())
		assert.Zero(t, coalesced(), "nothing coalesces below n")
		publish("k0", "7") // the 8th: indexed, k0's and k1's newest kept
		assert.Equal(t, 2, sub.Pending())
		assert.Equal(t, uint64(6), coalesced(), "each replaced event is counted")
		for i := 8; i < 1000; i++ {
			publish(fmt.Sprint("k", i%2), fmt.Sprint(i))
		}
		assert.Equal(t, 2, sub.Pending(), "bounded by the keys once indexed")
		assert.Equal(t, uint64(998), coalesced())

		gate <- struct{}{}
		synctest.Wait()
		all := got.all()
		require.Len(t, all, 3)
		assert.Equal(t, []string{"block", "k0", "k1"}, names(all))
		assert.Equal(t, []string{"998", "999"}, []string{all[1].ContentHash, all[2].ContentHash})

		// Drained: lazy again.
		publish("block", "1")
		synctest.Wait()
		publish("k0", "a")
		publish("k0", "b")
		assert.Equal(t, 2, sub.Pending(), "below n again, nothing coalesces")
		gate <- struct{}{}
		synctest.Wait()
		assert.Equal(t, []string{"block", "k0", "k0"}, names(got.all()[3:]))
		assert.True(t, b.Idle())
	})
}

func TestLazyNeedsACoalescingDeliveryAndACount(t *testing.T) {
	b := started()
	defer b.Close()
	noop := bus.On(func(events.ResourceChanged) {})
	for name, d := range map[string]bus.Delivery{
		"lossy":    bus.Lossy(4).Lazy(2),
		"negative": bus.Coalescing(bus.ByResourceKey).Lazy(-1),
	} {
		_, err := b.Subscribe(bus.SubscriberOptions{Name: name, Delivery: d, Handlers: []bus.Handler{noop}})
		assert.Error(t, err, name)
	}
}
