package bus

import (
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/musterd/musterd/pkg/events"
)

func changed(name string) events.ResourceChanged {
	return events.ResourceChanged{Meta: events.NewMetaAt(time.Unix(0, 0), "c"), Key: events.NewKey("MCPServer", "default", name), Operation: events.OperationUpdate}
}

// A follower gets what it selects, in publish order, and only events
// published after Follow returned.
func TestAFollowerGetsWhatItSelectsInOrder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := New(Options{})
		b.Start()
		defer b.Close()
		b.Publish(changed("before"))
		synctest.Wait()
		f, err := Follow(b, FollowOptions[string]{Name: "reader", Select: func(e events.Event) (string, bool) {
			rc, ok := e.(events.ResourceChanged)
			if !ok || rc.Key.Name == "skip" {
				return "", false
			}
			return rc.Key.Name, true
		}})
		require.NoError(t, err)
		defer f.Stop()
		for _, n := range []string{"a", "skip", "b", "c"} {
			b.Publish(changed(n))
		}
		b.Publish(events.IndexSynchronized{Meta: events.NewMetaAt(time.Unix(0, 0), "c")})
		synctest.Wait()
		var got []string
		for len(f.Events()) > 0 {
			got = append(got, <-f.Events())
		}
		assert.Equal(t, []string{"a", "b", "c"}, got)
		assert.Zero(t, f.Dropped())
	})
}

// A reader that falls behind loses the newest events, counted, and holds
// up no publisher; Stop releases the subscription even while its handler
// waits for the reader.
func TestASlowReaderLosesTheNewestAndDelaysNothing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := New(Options{})
		b.Start()
		defer b.Close()
		f, err := Follow(b, FollowOptions[events.Event]{Name: "slow", Buffer: 10, Select: func(e events.Event) (events.Event, bool) { return e, true }})
		require.NoError(t, err)
		next := 0
		publish := func(n int) {
			for range n {
				b.Publish(changed(fmt.Sprint(next)))
				next++
				synctest.Wait()
			}
		}
		// The handoff takes followHandoff, the handler holds one more while
		// it waits for the reader, the mailbox Buffer: nothing lost yet.
		publish(followHandoff + 1 + 10)
		assert.Zero(t, f.Dropped())
		publish(5) // returns: publishing never waits for a reader
		assert.Equal(t, uint64(5), f.Dropped(), "the newest are dropped and counted")
		assert.Equal(t, "0", (<-f.Events()).(events.ResourceChanged).Key.Name, "the oldest kept, in order")
		f.Stop()
		f.Stop()
		select {
		case <-f.Done():
		default:
			t.Fatal("Stop returned before the follower stopped")
		}
	})
}

// A follower's Done is closed when the bus closes.
func TestAFollowerEndsWithTheBus(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := New(Options{})
		b.Start()
		f, err := Follow(b, FollowOptions[int]{Name: "r", Select: func(events.Event) (int, bool) { return 1, true }})
		require.NoError(t, err)
		b.Close()
		synctest.Wait()
		select {
		case <-f.Done():
		default:
			t.Fatal("the follower outlived the bus")
		}
	})
}
