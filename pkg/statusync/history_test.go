package statusync_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/musterd/musterd/pkg/bus"
	"github.com/musterd/musterd/pkg/events"
	"github.com/musterd/musterd/pkg/statusync"
)

func TestHistoryKeepsTheLatestEventsOfEachResourceUntilItIsDeleted(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := bus.New(bus.Options{})
		h := statusync.NewHistory(b, statusync.HistoryOptions{Depth: 3})
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- h.Start(ctx) }()
		<-h.SubscriptionReady()
		b.Start()
		defer func() { cancel(); require.NoError(t, <-done); b.Close() }()

		a, c := events.NewKey("Workflow", "", "a"), events.NewKey("MCPServer", "", "c")
		for i := range 5 {
			bus.Publish(b, events.ReconciliationStarted{Meta: events.NewMeta(fmt.Sprint(i)), Key: a, Attempt: i + 1})
		}
		bus.Publish(b, events.ServiceStateChanged{Meta: events.NewMeta("crash"), Key: c, State: "Failed"})
		bus.Publish(b, events.BecameLeader{}) // about no resource: not kept
		synctest.Wait()

		var attempts []int
		for _, e := range h.Recent(events.Key{Kind: "Workflow", Name: "a"}) {
			attempts = append(attempts, e.(events.ReconciliationStarted).Attempt)
		}
		assert.Equal(t, []int{3, 4, 5}, attempts, "the latest Depth events, oldest first")
		require.Len(t, h.Recent(c), 1)

		bus.Publish(b, events.ResourceSynced{Key: a, Deleted: true})
		bus.Publish(b, events.StatusSynced{Key: a, Category: events.StatusDeleted})
		synctest.Wait()
		assert.Empty(t, h.Recent(a), "a deleted resource's history is forgotten, its last status removal included")
		assert.Len(t, h.Recent(c), 1)
	})
}

func TestHistoryKeepsAtMostLimitEventsInAll(t *testing.T) {
	h := statusync.NewHistory(bus.New(bus.Options{}), statusync.HistoryOptions{Depth: 3, Limit: 4})
	a, c := events.NewKey("Workflow", "", "a"), events.NewKey("Workflow", "", "c")
	started := func(k events.Key, attempt int) events.Event {
		return events.ReconciliationStarted{Key: k, Attempt: attempt}
	}
	h.Record(started(a, 1))
	h.Record(started(c, 1))
	h.Record(started(a, 2))
	h.Record(started(a, 3))
	h.Record(started(c, 2)) // the fifth: a's first goes
	assert.Equal(t, []events.Event{started(a, 2), started(a, 3)}, h.Recent(a))
	assert.Equal(t, []events.Event{started(c, 1), started(c, 2)}, h.Recent(c))
	assert.Equal(t, []events.Event{started(c, 1), started(a, 2), started(a, 3), started(c, 2)}, h.All())

	h.Record(events.ResourceSynced{Key: c, Deleted: true})
	assert.Empty(t, h.Recent(c))
	assert.Equal(t, []events.Event{started(a, 2), started(a, 3)}, h.All(), "a forgotten resource's events are not listed")
}

// TestHistoryAgreesWithAModel records random events of a few resources,
// deletions among them, and compares Recent and All after each with what
// they must be: of the events since a resource's last deletion, its
// latest Depth, and of those only the ones among the latest Limit
// recorded.
func TestHistoryAgreesWithAModel(t *testing.T) {
	const depth, limit = 3, 7
	h := statusync.NewHistory(bus.New(bus.Options{}), statusync.HistoryOptions{Depth: depth, Limit: limit})
	keys := []events.Key{events.NewKey("Workflow", "", "a"), events.NewKey("Workflow", "", "b"), events.NewKey("MCPServer", "ns", "c")}
	type recorded struct {
		key       events.Key
		e         events.Event
		forgotten bool
	}
	var model []recorded
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range 5000 {
		key := keys[rng.IntN(len(keys))]
		if rng.IntN(10) == 0 {
			h.Record(events.StatusSynced{Key: key, Category: events.StatusDeleted})
			for j := range model {
				if model[j].key == key {
					model[j].forgotten = true
				}
			}
		} else {
			e := events.ReconciliationStarted{Key: key, Attempt: i}
			h.Record(e)
			model = append(model, recorded{key: key, e: e})
		}
		kept := map[events.Key][]events.Event{}
		var all []events.Event
		for j := len(model) - 1; j >= max(0, len(model)-limit); j-- {
			r := model[j]
			if r.forgotten || len(kept[r.key]) == depth {
				continue
			}
			kept[r.key] = append([]events.Event{r.e}, kept[r.key]...)
			all = append([]events.Event{r.e}, all...)
		}
		for _, k := range keys {
			require.Equal(t, kept[k], h.Recent(k), "after event %d, %s", i, k)
		}
		require.Equal(t, all, h.All(), "after event %d", i)
	}
}
