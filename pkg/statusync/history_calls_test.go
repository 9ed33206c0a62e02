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

// A busy server tells its calls every interval; they must not push its
// reconciles out of its history.
func TestHistoryKeepsNoCountsOfCalls(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := bus.New(bus.Options{})
		h := statusync.NewHistory(b, statusync.HistoryOptions{Depth: 3})
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- h.Start(ctx) }()
		<-h.SubscriptionReady()
		b.Start()
		defer func() { cancel(); require.NoError(t, <-done); b.Close() }()

		c := events.NewKey("MCPServer", "", "c")
		bus.Publish(b, events.ResourceSynced{Meta: events.NewMeta("sync"), Key: c, Attempt: 1})
		for range 5 {
			bus.Publish(b, events.ToolCallsCounted{Meta: events.NewMeta(""), Key: c, Calls: 3})
		}
		synctest.Wait()
		recent := h.Recent(c)
		require.Len(t, recent, 1)
		assert.IsType(t, events.ResourceSynced{}, recent[0])
	})
}
