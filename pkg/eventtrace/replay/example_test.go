package replay_test

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/musterd/musterd/pkg/bus"
	"github.com/musterd/musterd/pkg/events"
	"github.com/musterd/musterd/pkg/eventtrace"
	"github.com/musterd/musterd/pkg/eventtrace/replay"
	"github.com/musterd/musterd/pkg/eventtrace/replay/replaytest"
	"github.com/musterd/musterd/pkg/lifecycle"
)

// SyncCounter is a user's own component: it counts successful reconciles.
type SyncCounter struct {
	bus    *bus.Bus
	ready  chan struct{}
	Synced atomic.Int64
}

func NewSyncCounter(b *bus.Bus) *SyncCounter {
	return &SyncCounter{bus: b, ready: make(chan struct{})}
}

func (c *SyncCounter) Name() string { return "sync-counter" }

func (c *SyncCounter) SubscriptionReady() <-chan struct{} { return c.ready }

// Start subscribes, as every stage does, and runs until ctx is done.
func (c *SyncCounter) Start(ctx context.Context) error {
	sub, err := bus.Subscribe(c.bus, c.Name(), bus.Unbounded(), // counts every event: none may coalesce
		func(events.ResourceSynced) { c.Synced.Add(1) })
	if err != nil {
		return err
	}
	close(c.ready)
	<-ctx.Done()
	sub.Unsubscribe()
	<-sub.Done()
	return nil
}

// testSyncCounter is the user's test: it replays a trace recorded from a
// real run through the debouncer, the coordinator (replaying the recorded
// reconcile outcomes) and the counter, checks what the counter saw, and
// pins the whole output with a golden file (go test -update rewrites it).
func testSyncCounter(t *testing.T) {
	tr, err := eventtrace.ReadFile("../../../testdata/traces/delete-recreate.trace")
	require.NoError(t, err)
	var counter *SyncCounter
	got, err := replay.Replay(tr, replay.Options{
		Debouncer:   true,
		Coordinator: true,
		Components: []func(b *bus.Bus) lifecycle.Component{
			func(b *bus.Bus) lifecycle.Component { counter = NewSyncCounter(b); return counter },
		},
	})
	require.NoError(t, err)
	assert.EqualValues(t, 3, counter.Synced.Load(), "created, deleted, created again")
	replaytest.Golden(t, got, "testdata/sync-counter.golden")
}

// A user tests their own component by replaying a recorded trace with it
// subscribed. Replay needs testing/synctest's virtual time, and so a
// *testing.T, which an example does not get: the user's test file says
//
//	func TestSyncCounter(t *testing.T) { synctest.Test(t, testSyncCounter) }
//
// as this package's TestExampleReplay does.
func ExampleReplay() {
	_ = testSyncCounter
}
