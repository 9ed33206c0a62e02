package debouncer_test

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"regexp"
	"runtime"
	"strconv"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/musterd/musterd/pkg/bus"
	"github.com/musterd/musterd/pkg/debouncer"
	"github.com/musterd/musterd/pkg/events"
)

// interval is the refractory period of the tests' debouncers. Time is
// virtual, so its size costs nothing.
const interval = 100 * time.Millisecond

func key(name string) events.Key { return events.NewKey("MCPServer", "", name) }

// fired is one trigger as the recorder received it.
type fired struct {
	at time.Time // the virtual time of receipt
	events.ReconciliationTriggered
}

// firing is what a test expects of one trigger.
type firing struct {
	at     time.Duration // after the bubble's start
	reason events.Reason
	keys   []events.TriggeredKey
}

// harness runs a debouncer on its own bus inside a synctest bubble and
// records every trigger with the virtual time it arrived.
type harness struct {
	t      *testing.T
	bus    *bus.Bus
	deb    *debouncer.Debouncer
	t0     time.Time
	cancel context.CancelFunc
	done   chan error
	once   sync.Once

	mu  sync.Mutex
	got []fired
}

// start runs a debouncer whose filesystem source has synced already, so
// that filesystem changes are not held: most tests are about what happens
// after the initial listing.
func start(t *testing.T) *harness {
	h := startUnsynced(t, debouncer.Options{Interval: interval})
	h.publish(events.IndexSynchronized{Meta: meta("fs-sync"), Source: events.SourceFilesystem})
	synctest.Wait()
	got := h.take()
	require.Len(t, got, 1)
	require.Equal(t, events.ReasonIndexSynced, got[0].Reason)
	return h
}

// startUnsynced runs a debouncer no source of which has synced.
func startUnsynced(t *testing.T, opts debouncer.Options) *harness {
	b := bus.New(bus.Options{})
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	d, err := debouncer.New(b, opts)
	require.NoError(t, err)
	h := &harness{t: t, bus: b, deb: d, t0: time.Now(), done: make(chan error, 1)}
	_, err = bus.Subscribe(b, "recorder", bus.Lossy(1<<20), func(e events.ReconciliationTriggered) {
		h.mu.Lock()
		h.got = append(h.got, fired{at: time.Now(), ReconciliationTriggered: e})
		h.mu.Unlock()
	})
	require.NoError(t, err)
	var ctx context.Context
	ctx, h.cancel = context.WithCancel(context.Background())
	go func() { h.done <- d.Start(ctx) }()
	<-d.SubscriptionReady()
	b.Start()
	t.Cleanup(func() {
		h.stop()
		for _, hs := range b.Stats().Handlers {
			assert.Zero(t, hs.Dropped, "the recorder dropped triggers; the test saw only some")
		}
		b.Close()
	})
	return h
}

// stop cancels the debouncer and checks that Start returned nil.
func (h *harness) stop() {
	h.once.Do(func() {
		h.cancel()
		assert.NoError(h.t, <-h.done)
	})
}

func meta(correlationID string) events.Meta {
	return events.Meta{Time: events.Now(), CorrelationID: correlationID}
}

func (h *harness) publish(e events.Event) { h.bus.Publish(e) }

// change publishes a filesystem change of name.
func (h *harness) change(name, correlationID string) {
	h.publish(events.ResourceChanged{Meta: meta(correlationID), Key: key(name),
		Operation: events.OperationUpdate, Source: events.SourceFilesystem})
}

func (h *harness) manual(name, correlationID string) {
	h.publish(events.ResourceChanged{Meta: meta(correlationID), Key: key(name),
		Operation: events.OperationUpdate, Source: events.SourceManual})
}

func (h *harness) serviceState(name, correlationID string) {
	h.publish(events.ServiceStateChanged{Meta: meta(correlationID), Key: key(name), State: "Failed", PreviousState: "Running"})
}

// at advances virtual time to offset after the bubble's start and waits
// until the debouncer has done everything due by then.
func (h *harness) at(offset time.Duration) {
	time.Sleep(time.Until(h.t0.Add(offset)))
	synctest.Wait()
}

// take returns the triggers received so far and forgets them.
func (h *harness) take() []fired {
	h.mu.Lock()
	defer h.mu.Unlock()
	got := h.got
	h.got = nil
	return got
}

// expect asserts that exactly the given triggers arrived, in order, and
// forgets them.
func (h *harness) expect(want ...firing) {
	h.t.Helper()
	got := h.take()
	require.Len(h.t, got, len(want), "triggers: %v", describe(got))
	for i, w := range want {
		g := got[i]
		at := h.t0.Add(w.at).UTC()
		assert.Equal(h.t, at, g.at.UTC(), "trigger %d received at", i)
		assert.Equal(h.t, at, g.Time, "trigger %d stamped at", i)
		assert.Equal(h.t, w.reason, g.Reason, "trigger %d reason", i)
		assert.Equal(h.t, w.keys, collect(g.Keys), "trigger %d keys", i)
		if len(w.keys) > 0 {
			assert.Equal(h.t, w.keys[0].CorrelationID, g.CorrelationID, "trigger %d takes its first key's correlation ID", i)
		}
	}
}

func collect(keys events.TriggeredKeys) []events.TriggeredKey {
	var out []events.TriggeredKey
	for tk := range keys.All() {
		out = append(out, tk)
	}
	return out
}

func describe(got []fired) []string {
	var out []string
	for _, g := range got {
		out = append(out, g.at.Format("15:04:05.000000")+" "+string(g.Reason)+" "+strconv.Itoa(g.Keys.Len())+" keys")
	}
	return out
}

func tk(name, correlationID string) events.TriggeredKey {
	return events.TriggeredKey{Key: key(name), CorrelationID: correlationID}
}

// sent is one change a test published.
type sent struct {
	at  time.Time
	key events.Key
	seq int // also its correlation ID
}

// driveChanges publishes 600 changes of three keys, spaced by pseudo-random
// gaps of 0 to 1.5 intervals in tenths of an interval, so that changes land
// before, inside, after and exactly at the end of refractory periods. The
// seed is fixed: every run is the same.
func driveChanges(h *harness) []sent {
	rng := rand.New(rand.NewPCG(7, 11))
	names := []string{"a", "b", "c"}
	var out []sent
	offset := time.Duration(0)
	for seq := range 600 {
		offset += time.Duration(rng.IntN(16)) * interval / 10
		h.at(offset)
		name := names[rng.IntN(len(names))]
		h.change(name, strconv.Itoa(seq))
		out = append(out, sent{at: time.Now(), key: key(name), seq: seq})
	}
	h.at(offset + 2*interval)
	return out
}

// keyFiring is one key of one trigger: when, and the sequence number of the
// newest change folded into it.
type keyFiring struct {
	at     time.Time
	seq    int
	reason events.Reason
}

func byKey(t *testing.T, got []fired) map[events.Key][]keyFiring {
	out := map[events.Key][]keyFiring{}
	for _, g := range got {
		for tk := range g.Keys.All() {
			seq, err := strconv.Atoi(tk.CorrelationID)
			require.NoError(t, err)
			out[tk.Key] = append(out[tk.Key], keyFiring{at: g.at, seq: seq, reason: g.Reason})
		}
	}
	return out
}

func TestRefractoryPeriodSeparatesTriggersOfAKey(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := start(t)
		driveChanges(h)
		reasons := map[events.Reason]int{}
		for k, firings := range byKey(t, h.take()) {
			for i := range firings {
				reasons[firings[i].reason]++
				if i > 0 {
					gap := firings[i].at.Sub(firings[i-1].at)
					assert.GreaterOrEqual(t, gap, interval, "%s triggered twice within %v", k, gap)
				}
			}
		}
		// The scenario exercises both edges; otherwise it proves little.
		assert.Positive(t, reasons[events.ReasonChange])
		assert.Positive(t, reasons[events.ReasonRefractoryEnd])
	})
}

func TestEveryChangeTriggersItsKeyWithinOneInterval(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := start(t)
		changes := driveChanges(h)
		firings := byKey(t, h.take())
		for _, c := range changes {
			// The trigger that covers a change is the first of its key to
			// carry that change or a newer one: a trigger carries the ID of
			// the newest change folded into it.
			var cover *keyFiring
			for i, f := range firings[c.key] {
				if f.seq >= c.seq {
					cover = &firings[c.key][i]
					break
				}
			}
			if !assert.NotNil(t, cover, "change %d of %s never triggered", c.seq, c.key) {
				continue
			}
			delay := cover.at.Sub(c.at)
			assert.GreaterOrEqual(t, delay, time.Duration(0), "change %d", c.seq)
			assert.LessOrEqual(t, delay, interval, "change %d of %s waited %v", c.seq, c.key, delay)
		}
	})
}

func TestFirstChangeTriggersWithZeroDelay(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := start(t)
		h.at(1234 * time.Microsecond)
		h.change("a", "first")
		synctest.Wait()
		h.expect(firing{at: 1234 * time.Microsecond, reason: events.ReasonChange, keys: []events.TriggeredKey{tk("a", "first")}})

		// After a quiet period (the refractory period ended with nothing
		// pending), the next change is a first change again.
		later := 1234*time.Microsecond + 3*interval/2
		h.at(later)
		h.change("a", "again")
		synctest.Wait()
		h.expect(firing{at: later, reason: events.ReasonChange, keys: []events.TriggeredKey{tk("a", "again")}})
	})
}

func TestChangeWhileTriggerPendingIsNotLost(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := start(t)
		h.change("a", "c0")
		h.at(3 * interval / 10)
		h.change("a", "c3")
		h.at(9 * interval / 10)
		h.change("a", "c9")
		h.at(interval)
		h.expect(
			firing{at: 0, reason: events.ReasonChange, keys: []events.TriggeredKey{tk("a", "c0")}},
			firing{at: interval, reason: events.ReasonRefractoryEnd, keys: []events.TriggeredKey{tk("a", "c9")}},
		)
		// Right after the refractory-end fire the key is in a new period: a
		// change now is pending again and fires when that period ends.
		h.change("a", "c10")
		h.at(2*interval - 1)
		h.expect()
		h.at(2 * interval)
		h.expect(firing{at: 2 * interval, reason: events.ReasonRefractoryEnd, keys: []events.TriggeredKey{tk("a", "c10")}})
		h.at(4 * interval)
		h.expect()
	})
}

func TestTenThousandChangesOfOneKeyInOneIntervalGiveTwoTriggers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := start(t)
		// The first change is handled alone: had the rest joined it in the
		// mailbox, the bus would have coalesced them before the debouncer.
		h.change("hot", "0")
		synctest.Wait()
		step := interval / 10000
		for i := 1; i < 10000; i++ {
			h.at(time.Duration(i) * step) // the last at interval - step
			h.change("hot", strconv.Itoa(i))
		}
		h.at(3 * interval)
		h.expect(
			firing{at: 0, reason: events.ReasonChange, keys: []events.TriggeredKey{tk("hot", "0")}},
			firing{at: interval, reason: events.ReasonRefractoryEnd, keys: []events.TriggeredKey{tk("hot", "9999")}},
		)
		// The second change made the pending trigger; the other 9998 folded
		// into it.
		assert.Equal(t, uint64(9998), h.deb.Coalesced())
	})
}

func TestTenThousandKeysAtOnceTriggerImmediatelyInFewEvents(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := start(t)
		h.at(interval)
		// The burst arrives while the debouncer is busy, so it all waits in
		// the mailbox. Without the pause the number of events would depend
		// on how often the debouncer catches up with this loop and runs idle
		// (10 to over 200 under -race); with it the count is exact.
		const n = 10000
		resume := h.deb.Pause()
		for i := range n {
			h.change("k"+strconv.Itoa(i), "c"+strconv.Itoa(i))
		}
		resume()
		synctest.Wait()

		got := h.take()
		seen := map[events.Key]int{}
		total := 0
		for _, g := range got {
			assert.Equal(t, events.ReasonChange, g.Reason)
			assert.Equal(t, h.t0.Add(interval), g.at, "all fire at the change instant")
			require.Positive(t, g.Keys.Len())
			assert.Equal(t, g.Keys.At(0).CorrelationID, g.CorrelationID)
			for tk := range g.Keys.All() {
				seen[tk.Key]++
				assert.Equal(t, "c"+tk.Key.Name[1:], tk.CorrelationID)
			}
			total += g.Keys.Len()
		}
		assert.Equal(t, n, total)
		assert.Len(t, seen, n, "every key triggered")
		for k, times := range seen {
			assert.Equal(t, 1, times, "%s triggered %d times", k, times)
		}
		// One event per MaxBatchKeys keys: the mailbox never ran empty
		// during the burst, so only the batch bound split it.
		assert.Len(t, got, (n+debouncer.MaxBatchKeys-1)/debouncer.MaxBatchKeys)
	})
}

func TestChangesAreHeldUntilTheirSourceSyncs(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := startUnsynced(t, debouncer.Options{Interval: interval})
		h.change("a", "a1")
		h.change("b", "b1")
		h.publish(events.ResourceChanged{Meta: meta("x1"), Key: key("x"), Source: events.SourceKubernetes, Operation: events.OperationCreate})
		h.at(2 * interval / 10)
		h.change("a", "a2")
		// Manual changes and service state never wait for a listing.
		h.manual("m", "m1")
		h.at(3 * interval / 10)
		h.serviceState("s", "s1")
		h.at(3 * interval)
		h.expect(
			firing{at: 2 * interval / 10, reason: events.ReasonManual, keys: []events.TriggeredKey{tk("m", "m1")}},
			firing{at: 3 * interval / 10, reason: events.ReasonServiceState, keys: []events.TriggeredKey{tk("s", "s1")}},
		)

		// The filesystem's sync fires its held keys, and only them, as one
		// trigger, each with its newest change's ID.
		h.publish(events.IndexSynchronized{Meta: meta("fs-sync"), Source: events.SourceFilesystem})
		synctest.Wait()
		h.expect(firing{at: 3 * interval, reason: events.ReasonIndexSynced, keys: []events.TriggeredKey{tk("a", "a2"), tk("b", "b1")}})

		// The fired keys are in their refractory period.
		h.at(3*interval + interval/10)
		h.change("a", "a3")
		h.at(4 * interval)
		h.expect(firing{at: 4 * interval, reason: events.ReasonRefractoryEnd, keys: []events.TriggeredKey{tk("a", "a3")}})

		// Kubernetes has not synced: its change is still held.
		h.at(5 * interval)
		h.expect()
		h.publish(events.IndexSynchronized{Meta: meta("k8s-sync"), Source: events.SourceKubernetes})
		synctest.Wait()
		h.expect(firing{at: 5 * interval, reason: events.ReasonIndexSynced, keys: []events.TriggeredKey{tk("x", "x1")}})

		// Once synced, a source's changes fire at once.
		h.at(6 * interval)
		h.change("b", "b2")
		synctest.Wait()
		h.expect(firing{at: 6 * interval, reason: events.ReasonChange, keys: []events.TriggeredKey{tk("b", "b2")}})
		assert.Equal(t, uint64(1), h.deb.Coalesced(), "a2 folded into the held a1")
	})
}

func TestIndexSyncedTriggerIsPublishedWhenNothingWasHeld(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := startUnsynced(t, debouncer.Options{Interval: interval})
		for i, offset := range []time.Duration{interval / 10, 5 * interval} {
			h.at(offset)
			id := "k8s-sync-" + strconv.Itoa(i)
			h.publish(events.IndexSynchronized{Meta: meta(id), Source: events.SourceKubernetes})
			synctest.Wait()
			got := h.take()
			require.Len(t, got, 1, "every IndexSynchronized makes a trigger, a resync's too")
			assert.Equal(t, events.ReasonIndexSynced, got[0].Reason)
			assert.Zero(t, got[0].Keys.Len())
			assert.Equal(t, id, got[0].CorrelationID, "an empty trigger continues the sync's chain")
			assert.Equal(t, h.t0.Add(offset).UTC(), got[0].Time)
		}
	})
}

func TestManualChangeFiresInsideRefractoryPeriod(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := start(t)
		h.change("a", "c0")
		h.at(2 * interval / 10)
		h.change("a", "c2") // pending
		h.at(5 * interval / 10)
		h.manual("a", "m5") // fires at once and covers c2
		h.at(7 * interval / 10)
		h.change("a", "c7") // pending in the period the manual change restarted
		h.at(3 * interval)
		h.expect(
			firing{at: 0, reason: events.ReasonChange, keys: []events.TriggeredKey{tk("a", "c0")}},
			firing{at: 5 * interval / 10, reason: events.ReasonManual, keys: []events.TriggeredKey{tk("a", "m5")}},
			firing{at: 15 * interval / 10, reason: events.ReasonRefractoryEnd, keys: []events.TriggeredKey{tk("a", "c7")}},
		)
		assert.Equal(t, uint64(1), h.deb.Coalesced(), "c2 rode along with the manual trigger")
	})
}

func TestManualChangeIsNotSwallowedByAFileChange(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := start(t)
		// Both wait in the mailbox together. Were they coalesced as one key,
		// the file change would replace the manual request.
		h.manual("a", "m")
		h.change("a", "c")
		h.at(2 * interval)
		h.expect(
			firing{at: 0, reason: events.ReasonManual, keys: []events.TriggeredKey{tk("a", "m")}},
			firing{at: interval, reason: events.ReasonRefractoryEnd, keys: []events.TriggeredKey{tk("a", "c")}},
		)
	})
}

func TestServiceStateObeysRefractoryPeriod(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := start(t)
		// A service crashing every tenth of an interval for five intervals,
		// as muster's restart loops did.
		h.serviceState("svc", "crash-0")
		last := map[int]string{}
		for k := range 49 {
			offset := interval/20 + time.Duration(k)*interval/10
			h.at(offset)
			id := "crash-" + strconv.Itoa(k+1)
			h.serviceState("svc", id)
			last[int(offset/interval)] = id
		}
		h.at(8 * interval)
		want := []firing{{at: 0, reason: events.ReasonServiceState, keys: []events.TriggeredKey{tk("svc", "crash-0")}}}
		// Each period ends as a service-state trigger, not refractory-end:
		// the coordinator must not take a crash for a change of definition
		// and reset the server's retry backoff.
		for i := 1; i <= 5; i++ {
			want = append(want, firing{at: time.Duration(i) * interval, reason: events.ReasonServiceState,
				keys: []events.TriggeredKey{tk("svc", last[i-1])}})
		}
		h.expect(want...)
	})
}

func TestAPeriodEndsAsAChangeIfAnyPendingChangeWasOfTheDefinition(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := start(t)
		// Two changes published back to back may reach the debouncer in one
		// batch or in two, as its goroutine happens to wake: waiting between
		// them makes it two, at the same instant.
		h.change("mixed", "m0")
		synctest.Wait()
		h.change("runtime", "r0")
		synctest.Wait()
		h.at(interval / 10)
		h.serviceState("mixed", "m1")
		h.serviceState("runtime", "r1")
		h.at(2 * interval / 10)
		h.change("mixed", "m2") // a definition change joins the crash
		h.at(3 * interval)
		h.expect(
			firing{at: 0, reason: events.ReasonChange, keys: []events.TriggeredKey{tk("mixed", "m0")}},
			firing{at: 0, reason: events.ReasonChange, keys: []events.TriggeredKey{tk("runtime", "r0")}},
			firing{at: interval, reason: events.ReasonRefractoryEnd, keys: []events.TriggeredKey{tk("mixed", "m2")}},
			firing{at: interval, reason: events.ReasonServiceState, keys: []events.TriggeredKey{tk("runtime", "r1")}},
		)
	})
}

func TestTriggersCarryCorrelationIDs(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := start(t)
		h.change("a", "a0")
		synctest.Wait()
		h.change("b", "b0")
		h.at(3 * interval / 10)
		h.change("a", "a3")
		h.change("b", "b3")
		h.at(6 * interval / 10)
		h.change("a", "a6")
		h.at(2 * interval)
		// a and b are due at the same instant: one trigger, a first because
		// it entered its period first, each key with its newest change, and
		// the event with a's.
		h.expect(
			firing{at: 0, reason: events.ReasonChange, keys: []events.TriggeredKey{tk("a", "a0")}},
			firing{at: 0, reason: events.ReasonChange, keys: []events.TriggeredKey{tk("b", "b0")}},
			firing{at: interval, reason: events.ReasonRefractoryEnd, keys: []events.TriggeredKey{tk("a", "a6"), tk("b", "b3")}},
		)
	})
}

func TestIdleKeysAreForgotten(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := start(t)
		tracked := func(keys, deadlines, held int) {
			t.Helper()
			k, d, hd := h.deb.Tracked()
			assert.Equal(t, []int{keys, deadlines, held}, []int{k, d, hd}, "keys, deadlines, held at %v", time.Since(h.t0))
		}
		h.change("a", "a0")
		synctest.Wait()
		tracked(1, 1, 0)
		h.at(interval - 1)
		tracked(1, 1, 0)
		h.at(interval)
		tracked(0, 0, 0)

		// A key whose period ends with a change pending is kept for one more
		// period, then forgotten.
		h.at(2 * interval)
		h.change("a", "a20")
		h.at(25 * interval / 10)
		h.change("a", "a25")
		h.at(3 * interval)
		tracked(1, 1, 0)
		h.at(4*interval - 1)
		tracked(1, 1, 0)
		h.at(4 * interval)
		tracked(0, 0, 0)
		require.Len(t, h.take(), 3)
	})
}

// The tables a burst grew (more keys at once than the interner keeps for
// a small fill) stay while changes may come in a stream, and go once no
// key has been in a period for IdleRelease; another burst before then
// reuses the table and restarts that wait.
func TestABurstsTablesGoOnceIdle(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := start(t)
		const burst = 2000
		for i := range burst {
			h.change(fmt.Sprint("k", i), "c")
		}
		synctest.Wait()
		require.Len(t, keysOf(h.take()), burst)
		h.at(interval)
		keys, deadlines, _ := h.deb.Tracked()
		require.Equal(t, []int{0, 0}, []int{keys, deadlines}, "every period has ended")
		handles, ring := h.deb.Kept()
		assert.Equal(t, burst, handles, "kept for the next fill of a stream")
		assert.GreaterOrEqual(t, ring, burst)

		// Another burst before the release, as in a stream of large fills:
		// it reuses the kept handles, and the wait starts again when its
		// periods end. (A small fill lets the table go at its end anyway:
		// events.Interner.)
		second := interval + debouncer.IdleRelease/2
		h.at(second)
		for i := range burst {
			h.change(fmt.Sprint("k", i), "c2")
		}
		synctest.Wait()
		require.Len(t, keysOf(h.take()), burst)
		h.at(interval + debouncer.IdleRelease)
		handles, _ = h.deb.Kept()
		assert.Equal(t, burst, handles, "not released while the second burst was in its periods, nor right after")
		h.at(second + interval + debouncer.IdleRelease - 1)
		handles, _ = h.deb.Kept()
		assert.Equal(t, burst, handles)
		h.at(second + interval + debouncer.IdleRelease)
		handles, ring = h.deb.Kept()
		assert.Equal(t, []int{0, 0}, []int{handles, ring}, "released IdleRelease after the last period ended")
		quiet, wake := h.deb.Quiescent(time.Now())
		assert.True(t, quiet)
		assert.True(t, wake.IsZero(), "the timer is stopped: nothing is left to do")

		// The debouncer works on from nothing.
		h.change("after", "a")
		synctest.Wait()
		require.Equal(t, []events.Key{key("after")}, keysOf(h.take()))
	})
}

func TestHeldChangesAreForgottenAfterSync(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := startUnsynced(t, debouncer.Options{Interval: interval})
		h.change("a", "a0")
		h.change("b", "b0")
		synctest.Wait()
		k, d, held := h.deb.Tracked()
		assert.Equal(t, []int{0, 0, 2}, []int{k, d, held})
		h.publish(events.IndexSynchronized{Meta: meta("sync"), Source: events.SourceFilesystem})
		synctest.Wait()
		k, d, held = h.deb.Tracked()
		assert.Equal(t, []int{2, 2, 0}, []int{k, d, held}, "fired keys are in their refractory period")
		h.at(interval)
		k, d, held = h.deb.Tracked()
		assert.Equal(t, []int{0, 0, 0}, []int{k, d, held})
	})
}

func TestNoGoroutinePerKey(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := start(t)
		synctest.Wait()
		before := bubbleGoroutines(t)
		require.Positive(t, before)
		for i := range 10000 {
			h.change("k"+strconv.Itoa(i), "")
		}
		synctest.Wait()
		keys, deadlines, _ := h.deb.Tracked()
		require.Equal(t, 10000, keys, "every key is in its refractory period")
		require.Equal(t, 10000, deadlines)
		assert.Equal(t, before, bubbleGoroutines(t))
		h.at(2 * interval)
		keys, _, _ = h.deb.Tracked()
		assert.Zero(t, keys)
		assert.Equal(t, before, bubbleGoroutines(t))
	})
}

// bubbleGoroutines counts the goroutines of the caller's synctest bubble.
// runtime.NumGoroutine would also count the test framework's goroutines,
// which come and go on their own.
func bubbleGoroutines(t *testing.T) int {
	buf := make([]byte, 1<<16)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	// Each goroutine's header reads "goroutine 7 [chan receive (durable),
	// synctest bubble 1]:"; the first is the caller's own.
	headers := regexp.MustCompile(`(?m)^goroutine \d+ \[[^\]]*(synctest bubble \d+)\]:`).FindAllSubmatch(buf, -1)
	require.NotEmpty(t, headers, "goroutine headers no longer name their bubble")
	count := 0
	for _, h := range headers {
		if string(h[1]) == string(headers[0][1]) {
			count++
		}
	}
	return count
}

func TestDefaultIntervalIsHalfASecond(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := startUnsynced(t, debouncer.Options{})
		h.manual("a", "m")
		synctest.Wait()
		h.manual("a", "m2") // restarts the period at 0 too
		synctest.Wait()
		h.serviceState("a", "s")
		h.at(time.Second)
		h.expect(
			firing{at: 0, reason: events.ReasonManual, keys: []events.TriggeredKey{tk("a", "m")}},
			firing{at: 0, reason: events.ReasonManual, keys: []events.TriggeredKey{tk("a", "m2")}},
			firing{at: 500 * time.Millisecond, reason: events.ReasonServiceState, keys: []events.TriggeredKey{tk("a", "s")}},
		)
	})
}

func TestNewRejectsInvalidOptions(t *testing.T) {
	_, err := debouncer.New(bus.New(bus.Options{}), debouncer.Options{Interval: -time.Second})
	assert.ErrorContains(t, err, "negative interval -1s")
	_, err = debouncer.New(nil, debouncer.Options{})
	assert.ErrorContains(t, err, "nil bus")
}

func TestStopUnsubscribes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := start(t)
		assert.Equal(t, "debouncer", h.deb.Name())
		h.change("a", "a0")
		h.at(interval / 10)
		h.change("a", "a1") // pending when the debouncer stops
		synctest.Wait()
		_, busy := h.deb.BusySince()
		assert.False(t, busy, "idle between events")

		h.stop()
		for _, hs := range h.bus.Stats().Handlers {
			assert.NotEqual(t, "debouncer", hs.Subscriber, "still subscribed after stop")
		}
		h.change("b", "b0")
		h.at(3 * interval)
		h.expect(firing{at: 0, reason: events.ReasonChange, keys: []events.TriggeredKey{tk("a", "a0")}})

		assert.ErrorContains(t, h.deb.Start(context.Background()), "already started")
	})
}

// A key whose period restarts again and again (here by manual changes, each
// handled on its own) leaves a stale deadline per restart, behind the live
// one of a key whose period began first; they are compacted away, so the
// queue stays bounded by the keys in their period.
func TestRestartedPeriodsKeepTheDeadlineQueueBounded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := start(t)
		h.change("b", "b0")
		synctest.Wait()
		for i := range 1000 {
			h.manual("a", "m"+strconv.Itoa(i))
			synctest.Wait() // handled one at a time: none coalesce in the mailbox
		}
		keys, deadlines, _ := h.deb.Tracked()
		assert.Equal(t, 2, keys)
		assert.LessOrEqual(t, deadlines, 2*2+64+1, "stale deadlines are compacted")
		assert.Len(t, h.take(), 1001, "the change and each manual change fire")
		h.at(interval)
		keys, deadlines, _ = h.deb.Tracked()
		assert.Equal(t, []int{0, 0}, []int{keys, deadlines})
	})
}

// A key fired twice with one reason before its batch is published (two
// sources that both held it sync in one drain) takes one place in the
// trigger, its first, with the newest correlation ID; fired with another
// reason in between, it is still listed once per trigger.
func TestAKeyFiredTwiceBeforeItsBatchGoesIsListedOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := startUnsynced(t, debouncer.Options{Interval: interval})
		for _, src := range []events.Source{events.SourceFilesystem, events.SourceKubernetes} {
			for _, name := range []string{"a", "b"} {
				h.publish(events.ResourceChanged{Meta: meta(name + "-" + string(src)), Key: key(name),
					Operation: events.OperationUpdate, Source: src})
			}
			synctest.Wait() // handled apart: one source's change does not replace the other's in the mailbox
		}
		resume := h.deb.Pause() // both syncs and a manual change land in one drain
		h.publish(events.IndexSynchronized{Meta: meta("fs-sync"), Source: events.SourceFilesystem})
		h.manual("b", "b-manual")
		h.publish(events.IndexSynchronized{Meta: meta("kube-sync"), Source: events.SourceKubernetes})
		resume()
		synctest.Wait()
		h.expect(
			firing{at: 0, reason: events.ReasonIndexSynced, keys: []events.TriggeredKey{
				tk("a", "a-"+string(events.SourceKubernetes)), tk("b", "b-"+string(events.SourceKubernetes))}},
			firing{at: 0, reason: events.ReasonManual, keys: []events.TriggeredKey{tk("b", "b-manual")}},
		)
	})
}

// keysOf lists the keys of triggers, in order.
func keysOf(got []fired) []events.Key {
	var keys []events.Key
	for _, f := range got {
		for tk := range f.Keys.All() {
			keys = append(keys, tk.Key)
		}
	}
	return keys
}
