package statusync_test

import (
	"context"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/musterd/musterd/pkg/bus"
	"github.com/musterd/musterd/pkg/events"
	"github.com/musterd/musterd/pkg/statusync"
)

func startReadiness(t *testing.T) (*bus.Bus, *statusync.Readiness, func()) {
	b := bus.New(bus.Options{})
	r := statusync.NewReadiness(b)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Start(ctx) }()
	<-r.SubscriptionReady()
	b.Start()
	return b, r, func() {
		cancel()
		require.NoError(t, <-done)
		b.Close()
	}
}

func indexSynced(keys ...events.Key) events.ReconciliationTriggered {
	var tks []events.TriggeredKey
	for _, k := range keys {
		tks = append(tks, events.TriggeredKey{Key: k, CorrelationID: k.Name})
	}
	return events.ReconciliationTriggered{Meta: events.NewMeta("sync"), Reason: events.ReasonIndexSynced, Keys: events.NewTriggeredKeys(tks...)}
}

func TestReadyAfterEveryResourceOfTheFirstListingHasAnOutcome(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b, r, stop := startReadiness(t)
		defer stop()
		a, c := events.NewKey("MCPServer", "", "a"), events.NewKey("Workflow", "", "c")

		bus.Publish(b, events.ResourceSynced{Key: a}) // before the listing: does not count
		synctest.Wait()
		assert.False(t, r.Ready())

		bus.Publish(b, indexSynced(a, c))
		synctest.Wait()
		assert.False(t, r.Ready())
		bus.Publish(b, events.ResourceSynced{Key: a})
		synctest.Wait()
		assert.False(t, r.Ready(), "c has no outcome yet")
		select {
		case <-r.Done():
			t.Fatal("Done closed before Ready")
		default:
		}
		bus.Publish(b, events.ResourceFailed{Key: c, Error: "invalid"})
		synctest.Wait()
		assert.True(t, r.Ready(), "a failure is an outcome too")
		select {
		case <-r.Done():
		default:
			t.Fatal("Done still open once Ready")
		}

		bus.Publish(b, indexSynced(events.NewKey("Workflow", "", "later")))
		synctest.Wait()
		assert.True(t, r.Ready(), "readiness latches")
	})
}

func TestAnEmptyListingIsReadyAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b, r, stop := startReadiness(t)
		defer stop()
		bus.Publish(b, events.ReconciliationTriggered{Reason: events.ReasonChange,
			Keys: events.NewTriggeredKeys(events.TriggeredKey{Key: events.NewKey("Workflow", "", "x")})})
		synctest.Wait()
		assert.False(t, r.Ready(), "only the index-synced trigger starts readiness")
		bus.Publish(b, indexSynced())
		synctest.Wait()
		assert.True(t, r.Ready())
	})
}

// A follower in leader election lists every resource but reconciles none;
// one deleted before it is elected gets no outcome from the full reconcile
// it runs then. Its delete must not hold readiness for ever.
func TestAResourceDeletedBeforeItsFirstOutcomeHoldsNoReadiness(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b, r, stop := startReadiness(t)
		defer stop()
		a, gone := events.NewKey("MCPServer", "", "a"), events.NewKey("MCPServer", "", "gone")
		bus.Publish(b, indexSynced(a, gone))
		bus.Publish(b, events.ResourceChanged{Key: gone, Operation: events.OperationUpdate})
		synctest.Wait()
		assert.False(t, r.Ready(), "an update is no outcome")
		bus.Publish(b, events.ResourceChanged{Key: gone, Operation: events.OperationDelete})
		synctest.Wait()
		assert.False(t, r.Ready(), "a still waits")
		bus.Publish(b, events.ResourceSynced{Key: a})
		synctest.Wait()
		assert.True(t, r.Ready(), "the deleted resource holds nothing")
	})
}
