package statusync_test

import (
	"context"
	"fmt"
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
