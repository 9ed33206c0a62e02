package bus_test

import (
	"bytes"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/musterd/musterd/pkg/bus"
	"github.com/musterd/musterd/pkg/events"
)

// deadlockDeadline bounds tests that would hang on a deadlock. A deadlock on
// a mutex is not a durable block, so synctest cannot report it; these tests
// use a generous real deadline instead.
const deadlockDeadline = 10 * time.Second

func changed(name string) events.ResourceChanged {
	return events.ResourceChanged{Meta: events.NewMeta(""), Key: events.NewKey("Workflow", "", name), Operation: events.OperationUpdate}
}

func started() *bus.Bus {
	b := bus.New(bus.Options{})
	b.Start()
	return b
}

// recorder collects what a handler received.
type recorder[T any] struct {
	mu  sync.Mutex
	got []T
}

func (r *recorder[T]) add(v T) { r.mu.Lock(); r.got = append(r.got, v); r.mu.Unlock() }
func (r *recorder[T]) all() []T {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]T(nil), r.got...)
}

func names(evs []events.ResourceChanged) []string {
	out := make([]string, len(evs))
	for i, e := range evs {
		out[i] = e.Key.Name
	}
	return out
}

// EventBus defect 1: it holds its global lock while a synchronous handler
// runs, so a handler that publishes deadlocks. A wrapper that registers user
// handlers with EventBus.Subscribe hangs here.
func TestHandlerThatPublishesDoesNotDeadlock(t *testing.T) {
	b := started()
	defer b.Close()
	done := make(chan struct{})
	_, err := bus.Subscribe(b, "relay", bus.Lossy(16), func(e events.ResourceChanged) {
		if e.Key.Name == "first" {
			bus.Publish(b, changed("second")) // re-entrant: same type
			bus.Publish(b, events.BecameLeader{Meta: events.NewMeta(e.CorrelationID)})
		}
	})
	require.NoError(t, err)
	_, err = bus.Subscribe(b, "sink", bus.Lossy(16), func(events.BecameLeader) { close(done) })
	require.NoError(t, err)

	bus.Publish(b, changed("first"))
	select {
	case <-done:
	case <-time.After(deadlockDeadline):
		t.Fatal("a handler that publishes deadlocked the bus")
	}
}

// EventBus defect 2: Unsubscribe matches by code pointer, so two closures of
// one function literal are confused and the wrong one can be removed.
func TestUnsubscribeRemovesExactlyThatSubscription(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := started()
		defer b.Close()
		var counts [2]atomic.Int32
		var subs []*bus.Subscription
		for i := range 2 { // one literal, so one code pointer for both closures
			s, err := bus.Subscribe(b, fmt.Sprint("sub-", i), bus.Lossy(8), func(events.ResourceChanged) { counts[i].Add(1) })
			require.NoError(t, err)
			subs = append(subs, s)
		}
		// EventBus would remove the first closure whose code pointer
		// matches: asking for the second removes the first.
		second := subs[1]

		second.Unsubscribe()
		<-second.Done()
		bus.Publish(b, changed("x"))
		synctest.Wait()

		assert.Equal(t, int32(1), counts[0].Load(), "the other closure was removed instead")
		assert.Equal(t, int32(0), counts[1].Load(), "the unsubscribed closure still receives")
	})
}

// EventBus defect 3: SubscribeOnce removes handlers by an index into a stale
// copy, so with two once-handlers the second is never removed.
func TestOnceSubscriptionsTakeExactlyOneEvent(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := started()
		defer b.Close()
		var onceA, always, onceC atomic.Int32
		sub := func(name string, once bool, n *atomic.Int32) *bus.Subscription {
			s, err := b.Subscribe(bus.SubscriberOptions{Name: name, Delivery: bus.Lossy(8), Once: once,
				Handlers: []bus.Handler{bus.On(func(events.ResourceChanged) { n.Add(1) })}})
			require.NoError(t, err)
			return s
		}
		a := sub("once-a", true, &onceA)
		sub("always", false, &always)
		c := sub("once-c", true, &onceC)

		for i := range 3 {
			bus.Publish(b, changed(fmt.Sprint(i)))
		}
		synctest.Wait()
		<-a.Done()
		<-c.Done()
		assert.Equal(t, int32(1), onceA.Load())
		assert.Equal(t, int32(3), always.Load())
		assert.Equal(t, int32(1), onceC.Load())
	})
}

// impostor claims a catalogue type's name but is another Go type.
type impostor struct {
	events.Meta
	Surprise int
}

func (impostor) EventType() string { return events.TypeResourceChanged }

// EventBus defect 4: an argument of the wrong type panics inside reflect. A
// wrapper that routes by EventType name hands an impostor to a
// func(events.ResourceChanged) and panics.
func TestEventOfAnotherTypeNeverReachesATypedHandler(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := bus.New(bus.Options{Logger: slog.New(slog.DiscardHandler)})
		b.Start()
		defer b.Close()
		typed := &recorder[events.ResourceChanged]{}
		any := &recorder[events.Event]{}
		_, err := bus.Subscribe(b, "typed", bus.Lossy(8), typed.add)
		require.NoError(t, err)
		_, err = bus.Subscribe(b, "wildcard", bus.Lossy(8), any.add)
		require.NoError(t, err)

		assert.NotPanics(t, func() {
			bus.Publish(b, impostor{Surprise: 42})
			bus.Publish(b, changed("real"))
			b.Publish(nil)
		})
		synctest.Wait()

		assert.Equal(t, []string{"real"}, names(typed.all()))
		assert.Equal(t, []events.Event{impostor{Surprise: 42}, typed.all()[0]}, any.all())
		st := b.Stats()
		assert.Equal(t, uint64(1), st.Rejected, "the nil event is counted")
		assert.Equal(t, uint64(2), st.Published[events.TypeResourceChanged], "both types publish under the name")
		require.NotEmpty(t, st.Handlers, "the subscribers' counters are listed")
		for _, h := range st.Handlers {
			assert.Zero(t, h.Panicked, h.Subscriber)
		}
	})
}

func TestOneSubscriptionReceivesAllItsTypesInPublishOrder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := started()
		defer b.Close()
		var got []string
		_, err := b.Subscribe(bus.SubscriberOptions{Name: "ordered", Delivery: bus.Lossy(10_000), Handlers: []bus.Handler{
			bus.On(func(e events.ResourceChanged) { got = append(got, "changed:"+e.Key.Name) }),
			bus.On(func(e events.ResourceSynced) { got = append(got, "synced:"+e.Key.Name) }),
		}})
		require.NoError(t, err)
		var want []string
		for i := range 1000 {
			name := fmt.Sprint(i)
			if i%3 == 0 {
				bus.Publish(b, events.ResourceSynced{Key: events.NewKey("Workflow", "", name)})
				want = append(want, "synced:"+name)
			} else {
				bus.Publish(b, changed(name))
				want = append(want, "changed:"+name)
			}
		}
		synctest.Wait()
		assert.Equal(t, want, got)
	})
}

func TestConcurrentPublishersKeepTheirOwnOrder(t *testing.T) {
	b := started()
	defer b.Close()
	const publishers, each = 8, 2000
	got := make([][]int, publishers)
	var wg sync.WaitGroup
	wg.Add(publishers * each)
	_, err := bus.Subscribe(b, "sink", bus.Lossy(publishers*each), func(e events.ResourceChanged) {
		var p, n int
		fmt.Sscanf(e.Key.Name, "%d-%d", &p, &n)
		got[p] = append(got[p], n)
		wg.Done()
	})
	require.NoError(t, err)

	for p := range publishers {
		go func() {
			for n := range each {
				bus.Publish(b, changed(fmt.Sprintf("%d-%d", p, n)))
			}
		}()
	}
	wg.Wait()
	for p := range publishers {
		require.Len(t, got[p], each)
		for n := range each {
			require.Equal(t, n, got[p][n], "publisher %d's events arrived out of order", p)
		}
	}
}

func TestSlowSubscriberDelaysNeitherPublisherNorOthers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := started()
		defer b.Close()
		release := make(chan struct{})
		_, err := bus.Subscribe(b, "slow", bus.Coalescing(bus.ByResourceKey), func(events.ResourceChanged) { <-release })
		require.NoError(t, err)
		var fastAt []time.Time
		_, err = bus.Subscribe(b, "fast", bus.Lossy(1000), func(events.ResourceChanged) { fastAt = append(fastAt, time.Now()) })
		require.NoError(t, err)

		t0 := time.Now()
		for i := range 500 {
			bus.Publish(b, changed(fmt.Sprint(i)))
		}
		assert.Equal(t, t0, time.Now(), "publishing waited")
		synctest.Wait() // the slow handler is blocked on its first event
		require.Len(t, fastAt, 500, "the fast subscriber was held up")
		for _, at := range fastAt {
			assert.Equal(t, t0, at)
		}
		close(release)
	})
}

func TestCoalescingKeepsTheNewestOfEachKeyInBoundedMemory(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := started()
		defer b.Close()
		gate := make(chan struct{})
		got := &recorder[events.ResourceChanged]{}
		sub, err := bus.Subscribe(b, "state", bus.Coalescing(bus.ByResourceKey), func(e events.ResourceChanged) {
			if e.Key.Name == "block" {
				<-gate
			}
			got.add(e)
		})
		require.NoError(t, err)
		bus.Publish(b, changed("block"))
		synctest.Wait()

		for round := range 10_000 {
			for k := range 10 {
				e := changed(fmt.Sprint("k", k))
				e.ContentHash = fmt.Sprint(round)
				bus.Publish(b, e)
			}
		}
		// k3 last, so it moves behind the others: survivors keep the order
		// of their newest publication.
		last := changed("k3")
		last.ContentHash = "final"
		bus.Publish(b, last)
		assert.Equal(t, 10, sub.Pending(), "pending events must be bounded by the number of keys")
		st := b.Stats().Handlers
		require.Len(t, st, 1)
		assert.Equal(t, uint64(10*10_000+1-10), st[0].Coalesced, "every replaced event is counted")

		close(gate)
		synctest.Wait()
		all := got.all()
		assert.Equal(t, []string{"block", "k0", "k1", "k2", "k4", "k5", "k6", "k7", "k8", "k9", "k3"}, names(all))
		for _, e := range all[1:10] {
			assert.Equal(t, "9999", e.ContentHash, "an older state of %s was delivered", e.Key.Name)
		}
		assert.Equal(t, "final", all[10].ContentHash)
	})
}

func TestCoalescingByResourceKeyReplacesAcrossTypes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := started()
		defer b.Close()
		gate := make(chan struct{})
		var got []string
		_, err := b.Subscribe(bus.SubscriberOptions{Name: "status", Delivery: bus.Coalescing(bus.ByResourceKey), Handlers: []bus.Handler{
			bus.On(func(e events.ResourceChanged) {
				if e.Key.Name == "block" {
					<-gate
				}
				got = append(got, "changed:"+e.Key.Name)
			}),
			bus.On(func(e events.ReconciliationStarted) { got = append(got, "started:"+e.Key.Name) }),
			bus.On(func(e events.ResourceSynced) { got = append(got, "synced:"+e.Key.Name) }),
		}})
		require.NoError(t, err)
		bus.Publish(b, changed("block"))
		synctest.Wait()
		key := events.NewKey("Workflow", "", "w")
		bus.Publish(b, changed("w"))
		bus.Publish(b, events.ReconciliationStarted{Key: key, Attempt: 1})
		bus.Publish(b, events.ResourceSynced{Key: key, Attempt: 1})
		close(gate)
		synctest.Wait()
		assert.Equal(t, []string{"changed:block", "synced:w"}, got)
	})
}

func trigger(reason events.Reason, names ...string) events.ReconciliationTriggered {
	var keys []events.TriggeredKey
	for _, n := range names {
		keys = append(keys, events.TriggeredKey{Key: events.NewKey("Workflow", "", n), CorrelationID: n})
	}
	return events.ReconciliationTriggered{Reason: reason, Keys: events.NewTriggeredKeys(keys...)}
}

func startTriggerMerger(pending events.Event) bus.Merger {
	return events.NewTriggerMerger(pending.(events.ReconciliationTriggered))
}

func TestCoalescingWithMergeFoldsPendingEvents(t *testing.T) {
	all := func(events.Event) string { return "all" }
	for name, d := range map[string]bus.Delivery{
		"eager": bus.Coalescing(all).WithMerge(startTriggerMerger),
		// A lazy mailbox folds what it holds when it indexes it, as if
		// each event had been put into an indexed one.
		"lazy": bus.Coalescing(all).WithMerge(startTriggerMerger).Lazy(16),
	} {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				b := started()
				defer b.Close()
				gate := make(chan struct{})
				var got []events.ReconciliationTriggered
				_, err := bus.Subscribe(b, "coordinator", d, func(e events.ReconciliationTriggered) {
					if e.Reason == events.ReasonManual {
						<-gate
					}
					got = append(got, e)
				})
				require.NoError(t, err)
				bus.Publish(b, trigger(events.ReasonManual, "first"))
				synctest.Wait()
				var published []events.TriggeredKey
				for i := range 1000 {
					e := trigger(events.ReasonChange, fmt.Sprint(i%50))
					bus.Publish(b, e)
					published = append(published, e.Keys.At(0))
				}
				close(gate)
				synctest.Wait()
				require.Len(t, got, 2)
				assert.Equal(t, events.NewTriggeredKeys(published...), got[1].Keys, "every key of every pending trigger arrives, once")
			})
		})
	}
}

// countingMerger folds triggers' keys into one accumulator and counts what
// the mailbox asks of it, and how many TriggeredKeys it copies.
type countingMerger struct {
	counts *mergeCounts
	newest events.ReconciliationTriggered
	keys   events.TriggeredKeysBuilder
}

type mergeCounts struct{ starts, adds, results, copied int }

func (c *mergeCounts) start(pending events.Event) bus.Merger {
	c.starts++
	m := &countingMerger{counts: c}
	m.fold(pending)
	return m
}

func (m *countingMerger) fold(e events.Event) {
	m.newest = e.(events.ReconciliationTriggered)
	m.keys.AddAll(m.newest.Keys)
	m.counts.copied += m.newest.Keys.Len()
}

func (m *countingMerger) Add(newer events.Event) { m.counts.adds++; m.fold(newer) }

func (m *countingMerger) Result() events.Event {
	m.counts.results++
	m.counts.copied += m.keys.Len()
	e := m.newest
	e.Keys = m.keys.Build()
	return e
}

func TestCoalescingWithMergeFoldsABurstIntoOneAccumulator(t *testing.T) {
	// Merging pairs of immutable events copies the whole pending set at
	// each collision: n single-key triggers cost n²/2 key copies. The
	// mailbox's own accumulator takes each key once, plus one copy when
	// the fold is delivered.
	const n = 20_000
	synctest.Test(t, func(t *testing.T) {
		b := started()
		defer b.Close()
		var counts mergeCounts
		gate := make(chan struct{})
		var got []events.ReconciliationTriggered
		sub, err := bus.Subscribe(b, "coordinator", bus.Coalescing(func(events.Event) string { return "all" }).WithMerge(counts.start),
			func(e events.ReconciliationTriggered) {
				if e.Reason == events.ReasonManual {
					<-gate
				}
				got = append(got, e)
			})
		require.NoError(t, err)
		bus.Publish(b, trigger(events.ReasonManual, "gate"))
		synctest.Wait()
		for i := range n {
			bus.Publish(b, trigger(events.ReasonChange, strconv.Itoa(i)))
		}
		assert.Equal(t, 1, sub.Pending())
		assert.Equal(t, mergeCounts{starts: 1, adds: n - 1, copied: n}, counts, "before delivery")
		close(gate)
		synctest.Wait()
		assert.Equal(t, mergeCounts{starts: 1, adds: n - 1, results: 1, copied: 2 * n}, counts, "after delivery")
		require.Len(t, got, 2)
		assert.Equal(t, n, got[1].Keys.Len())
	})
}

func TestCoalescingWithMergeReplacesAnEventOfAnotherHandler(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := started()
		defer b.Close()
		var counts mergeCounts
		gate := make(chan struct{})
		var got []string
		_, err := b.Subscribe(bus.SubscriberOptions{
			Name:     "mixed",
			Delivery: bus.Coalescing(func(events.Event) string { return "all" }).WithMerge(counts.start),
			Handlers: []bus.Handler{
				bus.On(func(events.BecameLeader) { <-gate }),
				bus.On(func(e events.ReconciliationTriggered) {
					for tk := range e.Keys.All() {
						got = append(got, "triggered:"+tk.Key.Name)
					}
				}),
				bus.On(func(e events.ResourceChanged) { got = append(got, "changed:"+e.Key.Name) }),
			},
		})
		require.NoError(t, err)
		bus.Publish(b, events.BecameLeader{})
		synctest.Wait()
		bus.Publish(b, trigger(events.ReasonChange, "a"))
		bus.Publish(b, trigger(events.ReasonChange, "b")) // folds into a
		bus.Publish(b, changed("x"))                      // replaces the fold of a and b
		bus.Publish(b, trigger(events.ReasonChange, "c")) // replaces x
		bus.Publish(b, trigger(events.ReasonChange, "d")) // folds into c, in a new Merger
		close(gate)
		synctest.Wait()
		assert.Equal(t, []string{"triggered:c", "triggered:d"}, got)
		assert.Equal(t, mergeCounts{starts: 2, adds: 2, results: 1, copied: 2 + 2 + 2}, counts)
	})
}

func TestLossyDropsBeyondItsBoundAndCountsPerType(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := started()
		defer b.Close()
		gate := make(chan struct{})
		var handled atomic.Int32
		sub, err := b.Subscribe(bus.SubscriberOptions{Name: "logger", Delivery: bus.Lossy(3), Handlers: []bus.Handler{
			bus.On(func(events.BecameLeader) { <-gate; handled.Add(1) }),
			bus.On(func(events.ResourceChanged) { handled.Add(1) }),
			bus.On(func(events.ResourceSynced) { handled.Add(1) }),
		}})
		require.NoError(t, err)
		bus.Publish(b, events.BecameLeader{})
		synctest.Wait()
		for i := range 6 {
			bus.Publish(b, changed(fmt.Sprint(i))) // 3 kept, 3 dropped
		}
		for range 4 {
			bus.Publish(b, events.ResourceSynced{}) // all 4 dropped
		}
		assert.Equal(t, 3, sub.Pending())
		close(gate)
		synctest.Wait()
		assert.Equal(t, int32(4), handled.Load())

		dropped := map[string]uint64{}
		for _, h := range b.Stats().Handlers {
			require.Equal(t, "logger", h.Subscriber)
			dropped[h.EventType] = h.Dropped
		}
		assert.Equal(t, map[string]uint64{"BecameLeader": 0, "ResourceChanged": 3, "ResourceSynced": 4}, dropped)
	})
}

func TestEventsPublishedBeforeStartAreHeldAndDeliveredInOrder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := bus.New(bus.Options{})
		defer b.Close()
		early := &recorder[events.ResourceChanged]{}
		_, err := bus.Subscribe(b, "early", bus.Lossy(100), early.add)
		require.NoError(t, err)
		for i := range 5 {
			bus.Publish(b, changed(fmt.Sprint("before-", i)))
		}
		synctest.Wait()
		assert.Empty(t, early.all(), "nothing is delivered before Start")

		// A component that subscribes late in start-up still sees them.
		late := &recorder[events.ResourceChanged]{}
		_, err = bus.Subscribe(b, "late", bus.Lossy(100), late.add)
		require.NoError(t, err)

		var wg sync.WaitGroup
		wg.Go(func() {
			for i := range 5 {
				bus.Publish(b, changed(fmt.Sprint("during-", i)))
			}
		})
		b.Start()
		wg.Wait()
		bus.Publish(b, changed("after"))
		synctest.Wait()

		for _, r := range []*recorder[events.ResourceChanged]{early, late} {
			got := names(r.all())
			require.Len(t, got, 11)
			assert.Equal(t, []string{"before-0", "before-1", "before-2", "before-3", "before-4"}, got[:5], "held events come first, in order")
			assert.Equal(t, "after", got[10])
		}
		assert.True(t, b.Started())
	})
}

func TestPanickingHandlerIsRecoveredCountedAndLogged(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var logs bytes.Buffer
		b := bus.New(bus.Options{Logger: slog.New(slog.NewJSONHandler(&logs, nil))})
		b.Start()
		defer b.Close()
		got := &recorder[events.ResourceChanged]{}
		_, err := bus.Subscribe(b, "fragile", bus.Lossy(10), func(e events.ResourceChanged) {
			if e.Key.Name == "bad" {
				panic("handler bug")
			}
			got.add(e)
		})
		require.NoError(t, err)
		for _, n := range []string{"a", "bad", "b", "bad", "c"} {
			bus.Publish(b, changed(n))
		}
		synctest.Wait()
		assert.Equal(t, []string{"a", "b", "c"}, names(got.all()))
		st := b.Stats().Handlers
		require.Len(t, st, 1)
		assert.Equal(t, uint64(2), st[0].Panicked)
		assert.Equal(t, uint64(5), st[0].Delivered)
		assert.Contains(t, logs.String(), `"subscriber":"fragile"`)
		assert.Contains(t, logs.String(), "handler bug")
	})
}

func TestUnsubscribeFromOwnHandler(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := started()
		defer b.Close()
		var sub *bus.Subscription
		var n atomic.Int32
		gate := make(chan struct{})
		sub, err := bus.Subscribe(b, "self", bus.Lossy(10), func(events.ResourceChanged) {
			<-gate
			n.Add(1)
			sub.Unsubscribe()
			sub.Unsubscribe() // twice is harmless
		})
		require.NoError(t, err)
		close(gate)
		bus.Publish(b, changed("a"))
		bus.Publish(b, changed("b"))
		<-sub.Done()
		bus.Publish(b, changed("c"))
		synctest.Wait()
		assert.Equal(t, int32(1), n.Load())
		assert.Empty(t, b.Stats().Handlers, "an unsubscribed subscription leaves the stats")

		// Its name is free again.
		_, err = bus.Subscribe(b, "self", bus.Lossy(1), func(events.ResourceChanged) {})
		assert.NoError(t, err)
	})
}

func TestBusySinceReportsAHandlerThatRuns(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := started()
		defer b.Close()
		gate := make(chan struct{})
		sub, err := bus.Subscribe(b, "busy", bus.Lossy(1), func(events.ResourceChanged) { <-gate })
		require.NoError(t, err)
		_, busy := sub.BusySince()
		assert.False(t, busy)

		t0 := time.Now()
		bus.Publish(b, changed("x"))
		synctest.Wait()
		time.Sleep(90 * time.Second)
		since, busy := sub.BusySince()
		assert.True(t, busy)
		assert.Equal(t, t0, since)
		assert.Equal(t, 90*time.Second, time.Since(since))

		close(gate)
		synctest.Wait()
		_, busy = sub.BusySince()
		assert.False(t, busy)
	})
}

// Unhandled counts every event not yet handled, those taken from the
// mailbox included, where Pending counts only the mailbox: a reader that
// waits for Unhandled to reach zero has seen what was published before it.
func TestUnhandledCountsEventsTakenFromTheMailboxUntilHandled(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := started()
		defer b.Close()
		gate := make(chan struct{})
		sub, err := bus.Subscribe(b, "gated", bus.Unbounded(), func(events.ResourceChanged) { <-gate })
		require.NoError(t, err)
		assert.Zero(t, sub.Unhandled())

		for i := range 3 {
			bus.Publish(b, events.ResourceChanged{Generation: int64(i)})
		}
		synctest.Wait() // the handler holds the first; the batch took all three
		assert.Zero(t, sub.Pending(), "the mailbox was drained into the batch")
		assert.Equal(t, 3, sub.Unhandled())

		gate <- struct{}{}
		synctest.Wait()
		assert.Zero(t, sub.Pending())
		assert.Equal(t, 3, sub.Unhandled(), "a batch is counted off once all of it is handled")
		close(gate)
		synctest.Wait()
		assert.Zero(t, sub.Unhandled())
	})
}

type notAnEvent interface {
	events.Event
	Extra()
}

func TestSubscribeRejectsMisuseClearly(t *testing.T) {
	b := started()
	noop := bus.On(func(events.ResourceChanged) {})
	cases := map[string]struct {
		opts bus.SubscriberOptions
		want string
	}{
		"no name":          {bus.SubscriberOptions{Delivery: bus.Lossy(1), Handlers: []bus.Handler{noop}}, "needs a name"},
		"no delivery":      {bus.SubscriberOptions{Name: "x", Handlers: []bus.Handler{noop}}, "delivery unset"},
		"zero capacity":    {bus.SubscriberOptions{Name: "x", Delivery: bus.Lossy(0), Handlers: []bus.Handler{noop}}, "delivery unset"},
		"merge lossy":      {bus.SubscriberOptions{Name: "x", Delivery: bus.Lossy(1).WithMerge(startTriggerMerger), Handlers: []bus.Handler{noop}}, "WithMerge needs a coalescing"},
		"no handlers":      {bus.SubscriberOptions{Name: "x", Delivery: bus.Lossy(1)}, "no handlers"},
		"zero handler":     {bus.SubscriberOptions{Name: "x", Delivery: bus.Lossy(1), Handlers: []bus.Handler{{}}}, "bus.On"},
		"two of one type":  {bus.SubscriberOptions{Name: "x", Delivery: bus.Lossy(1), Handlers: []bus.Handler{noop, noop}}, "two handlers"},
		"other interface":  {bus.SubscriberOptions{Name: "x", Delivery: bus.Lossy(1), Handlers: []bus.Handler{bus.On(func(notAnEvent) {})}}, "is an interface"},
		"coalescing+lossy": {bus.SubscriberOptions{Name: "x", Delivery: bus.Delivery{}, Handlers: []bus.Handler{noop}}, "delivery unset"},
		"merge unbounded":  {bus.SubscriberOptions{Name: "x", Delivery: bus.Unbounded().WithMerge(startTriggerMerger), Handlers: []bus.Handler{noop}}, "WithMerge needs a coalescing"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := b.Subscribe(c.opts)
			assert.ErrorContains(t, err, c.want)
		})
	}

	_, err := b.Subscribe(bus.SubscriberOptions{Name: "taken", Delivery: bus.Lossy(1), Handlers: []bus.Handler{noop}})
	require.NoError(t, err)
	_, err = b.Subscribe(bus.SubscriberOptions{Name: "taken", Delivery: bus.Lossy(1), Handlers: []bus.Handler{noop}})
	assert.ErrorContains(t, err, `named "taken" exists`)

	b.Close()
	_, err = b.Subscribe(bus.SubscriberOptions{Name: "late", Delivery: bus.Lossy(1), Handlers: []bus.Handler{noop}})
	assert.ErrorContains(t, err, "closed")
	assert.NotPanics(t, func() { bus.Publish(b, changed("after close")) })
}

func TestOnIdleRunsAfterEachDrain(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := started()
		defer b.Close()
		gate := make(chan struct{})
		var batches [][]string
		var current []string
		_, err := b.Subscribe(bus.SubscriberOptions{Name: "batcher", Delivery: bus.Lossy(100),
			Handlers: []bus.Handler{bus.On(func(e events.ResourceChanged) {
				if e.Key.Name == "gate" {
					<-gate
				}
				current = append(current, e.Key.Name)
			})},
			OnIdle: func() { batches = append(batches, current); current = nil },
		})
		require.NoError(t, err)
		bus.Publish(b, changed("gate"))
		synctest.Wait()
		for _, n := range []string{"a", "b", "c"} {
			bus.Publish(b, changed(n))
		}
		close(gate)
		synctest.Wait()
		assert.Equal(t, [][]string{{"gate", "a", "b", "c"}}, batches, "events pending when a handler returns belong to the same drain")
	})
}

func TestIndexSynchronizedOfDifferentSourcesAreNotCoalesced(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := started()
		defer b.Close()
		gate := make(chan struct{})
		var got []events.Source
		_, err := b.Subscribe(bus.SubscriberOptions{Name: "syncs", Delivery: bus.Coalescing(bus.ByResourceKey), Handlers: []bus.Handler{
			bus.On(func(events.BecameLeader) { <-gate }),
			bus.On(func(e events.IndexSynchronized) { got = append(got, e.Source) }),
		}})
		require.NoError(t, err)
		bus.Publish(b, events.BecameLeader{})
		synctest.Wait()
		bus.Publish(b, events.IndexSynchronized{Source: events.SourceFilesystem})
		bus.Publish(b, events.IndexSynchronized{Source: events.SourceKubernetes})
		bus.Publish(b, events.IndexSynchronized{Source: events.SourceFilesystem})
		close(gate)
		synctest.Wait()
		assert.Equal(t, []events.Source{events.SourceKubernetes, events.SourceFilesystem}, got)
	})
}

func TestAttachmentSignalsReadyAndForwardsBusySince(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := started()
		defer b.Close()
		var a bus.Attachment // the zero value is usable
		select {
		case <-a.SubscriptionReady():
			t.Fatal("ready before Attach")
		default:
		}
		_, busy := a.BusySince()
		assert.False(t, busy)

		gate := make(chan struct{})
		sub, err := bus.Subscribe(b, "component", bus.Lossy(1), func(events.ResourceChanged) { <-gate })
		require.NoError(t, err)
		a.Attach(sub)
		<-a.SubscriptionReady()

		t0 := time.Now()
		bus.Publish(b, changed("x"))
		synctest.Wait()
		since, busy := a.BusySince()
		assert.True(t, busy)
		assert.Equal(t, t0, since)
		close(gate)
	})
}

func TestUnboundedDeliversEveryEventInOrderToABlockedSubscriber(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const n = 100_000
		b := started()
		defer b.Close()
		gate := make(chan struct{})
		got := make([]int64, 0, n)
		sub, err := b.Subscribe(bus.SubscriberOptions{Name: "recorder", Delivery: bus.Unbounded(), Handlers: []bus.Handler{
			bus.On(func(e events.ResourceChanged) {
				if len(got) == 0 {
					<-gate
				}
				got = append(got, e.Generation)
			}),
		}})
		require.NoError(t, err)
		bus.Publish(b, events.ResourceChanged{Generation: 0})
		synctest.Wait() // the handler holds the first event
		for i := 1; i < n; i++ {
			bus.Publish(b, events.ResourceChanged{Generation: int64(i)})
		}
		assert.Equal(t, n-1, sub.Pending(), "nothing dropped or coalesced while blocked")
		close(gate)
		synctest.Wait()

		require.Len(t, got, n)
		for i, g := range got {
			if g != int64(i) {
				t.Fatalf("event %d delivered at position %d", g, i)
			}
		}
		assert.Zero(t, sub.Pending())
		require.Len(t, b.Stats().Handlers, 1)
		h := b.Stats().Handlers[0]
		assert.Equal(t, bus.HandlerStats{Subscriber: "recorder", EventType: "ResourceChanged", Delivered: n}, h)
	})
}

func TestDrainHandlesWhatWasPublishedBeforeItAndNothingAfter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := started()
		defer b.Close()
		gate := make(chan struct{})
		var got recorder[string]
		idles := 0
		sub, err := b.Subscribe(bus.SubscriberOptions{Name: "recorder", Delivery: bus.Unbounded(),
			Handlers: []bus.Handler{bus.On(func(e events.ResourceChanged) {
				if e.Key.Name == "first" {
					<-gate
				}
				got.add(e.Key.Name)
			})},
			OnIdle: func() { idles++ },
		})
		require.NoError(t, err)
		for _, name := range []string{"first", "a", "b", "c"} {
			bus.Publish(b, changed(name))
		}
		synctest.Wait()
		sub.Drain()
		bus.Publish(b, changed("after drain"))
		select {
		case <-sub.Done():
			t.Fatal("a draining subscription ended with events pending")
		default:
		}
		close(gate)
		<-sub.Done()
		assert.Equal(t, []string{"first", "a", "b", "c"}, got.all())
		assert.Equal(t, 1, idles, "OnIdle runs after the last drained event")
		assert.Empty(t, b.Stats().Handlers, "the drained subscription is gone")
		_, err = bus.Subscribe(b, "recorder", bus.Unbounded(), func(events.ResourceChanged) {})
		assert.NoError(t, err, "its name is free again")
	})
}

func TestDrainHandlesEventsThatArriveWhileOnIdleRuns(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := started()
		defer b.Close()
		gate := make(chan struct{})
		var got recorder[string]
		sub, err := b.Subscribe(bus.SubscriberOptions{Name: "recorder", Delivery: bus.Unbounded(),
			Handlers: []bus.Handler{bus.On(func(e events.ResourceChanged) { got.add(e.Key.Name) })},
			OnIdle:   func() { <-gate },
		})
		require.NoError(t, err)
		bus.Publish(b, changed("x"))
		synctest.Wait() // OnIdle blocks
		bus.Publish(b, changed("y"))
		bus.Publish(b, changed("z"))
		sub.Drain()
		close(gate)
		<-sub.Done()
		assert.Equal(t, []string{"x", "y", "z"}, got.all())
	})
}

func TestDrainOfAnIdleSubscriptionEndsIt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := started()
		defer b.Close()
		sub, err := bus.Subscribe(b, "idle", bus.Unbounded(), func(events.ResourceChanged) {})
		require.NoError(t, err)
		sub.Drain()
		sub.Drain() // twice is harmless
		<-sub.Done()
		assert.Empty(t, b.Stats().Handlers)
	})
}
