package replay_test

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/musterd/musterd/pkg/bus"
	"github.com/musterd/musterd/pkg/events"
	"github.com/musterd/musterd/pkg/eventtrace"
	"github.com/musterd/musterd/pkg/eventtrace/replay"
	"github.com/musterd/musterd/pkg/eventtrace/replay/replaytest"
	"github.com/musterd/musterd/pkg/lifecycle"
)

var (
	recordedStart = time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	keyA          = events.NewKey("MCPServer", "", "a")
	keyB          = events.NewKey("MCPServer", "", "b")
)

// entry is one line of a hand-written trace.
type entry struct {
	at time.Duration
	e  func(meta events.Meta) events.Event
}

func indexSynced(m events.Meta) events.Event {
	return events.IndexSynchronized{Meta: m, Source: events.SourceFilesystem}
}

func changed(key events.Key, op events.Operation) func(events.Meta) events.Event {
	return func(m events.Meta) events.Event {
		return events.ResourceChanged{Meta: m, Key: key, Operation: op, Source: events.SourceFilesystem}
	}
}

func synced(key events.Key) func(events.Meta) events.Event {
	return func(m events.Meta) events.Event { return events.ResourceSynced{Meta: m, Key: key, Attempt: 1} }
}

// writeTrace writes a trace as the recorder would, and reads it back.
func writeTrace(t *testing.T, cfg eventtrace.Config, entries ...entry) *eventtrace.Trace {
	t.Helper()
	var buf bytes.Buffer
	w, err := eventtrace.NewWriter(&buf, eventtrace.Header{Musterd: "test", Start: recordedStart, Config: cfg})
	require.NoError(t, err)
	for i, en := range entries {
		meta := events.Meta{Time: recordedStart.Add(en.at), CorrelationID: fmt.Sprintf("rec-%d", i+1)}
		require.NoError(t, w.Write(en.at, en.e(meta)))
	}
	require.NoError(t, w.Flush())
	tr, err := eventtrace.Read(&buf)
	require.NoError(t, err)
	return tr
}

var pipeline = replay.Options{Debouncer: true, Coordinator: true, StatusSync: true}

// lines renders a replay's output one event a line, for exact comparison.
func lines(t *testing.T, tr *eventtrace.Trace) []string {
	t.Helper()
	var out []string
	for _, e := range tr.Entries {
		s := fmt.Sprintf("%v %s %s", e.At, e.Event.EventType(), e.Event.Metadata().CorrelationID)
		switch v := e.Event.(type) {
		case events.ReconciliationTriggered:
			s += fmt.Sprintf(" %s %v", v.Reason, v.Keys.Keys())
		case events.ReconciliationStarted:
			s += fmt.Sprintf(" %s attempt=%d", v.Key.Name, v.Attempt)
		case events.ResourceSynced:
			s += fmt.Sprintf(" %s attempt=%d", v.Key.Name, v.Attempt)
		case events.ResourceFailed:
			s += fmt.Sprintf(" %s attempt=%d retry=none", v.Key.Name, v.Attempt)
			if v.WillRetry() {
				s = strings.Replace(s, "none", v.NextRetry.Sub(v.Time).String(), 1)
			}
		case events.StatusSynced:
			s += fmt.Sprintf(" %s %s", v.Key.Name, v.Category)
		}
		require.Equal(t, tr.Header.Start.Add(e.At), e.Event.Metadata().Time, "an event's time is its offset on the replay's clock")
		out = append(out, s)
	}
	return out
}

func TestAHandWrittenTraceReplaysToExactlyTheseEvents(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tr := writeTrace(t, eventtrace.Config{Debounce: eventtrace.Duration(100 * time.Millisecond)},
			entry{0, indexSynced},
			entry{time.Second, changed(keyA, events.OperationCreate)},
			entry{1050 * time.Millisecond, changed(keyA, events.OperationUpdate)},
			entry{1080 * time.Millisecond, changed(keyA, events.OperationUpdate)},
			entry{1500 * time.Millisecond, changed(keyB, events.OperationCreate)},
		)
		got, err := replay.Replay(tr, pipeline)
		require.NoError(t, err)
		assert.Equal(t, time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC), got.Header.Start, "the bubble's clock")
		assert.Equal(t, tr.Header.Config, got.Header.Config)
		assert.Equal(t, []string{
			"0s ReconciliationTriggered rec-1 index-synced []",
			// The leading edge: the change triggers at once. The store shows
			// it Pending, Reconciling, Synced, each written in turn.
			"1s ReconciliationTriggered rec-2 change [MCPServer/default/a]",
			"1s StatusSynced rec-2 a written",
			"1s ReconciliationStarted rec-2 a attempt=1",
			"1s ResourceSynced rec-2 a attempt=1",
			"1s StatusSynced rec-2 a written",
			"1s StatusSynced rec-2 a written",
			// Changes inside the 100ms refractory period fire once at its end,
			// under the newest change's ID.
			"1.05s StatusSynced rec-3 a written",
			"1.08s StatusSynced rec-4 a written",
			"1.1s ReconciliationTriggered rec-4 refractory-end [MCPServer/default/a]",
			"1.1s ReconciliationStarted rec-4 a attempt=1",
			"1.1s ResourceSynced rec-4 a attempt=1",
			"1.1s StatusSynced rec-4 a written",
			"1.1s StatusSynced rec-4 a written",
			"1.5s ReconciliationTriggered rec-5 change [MCPServer/default/b]",
			"1.5s StatusSynced rec-5 b written",
			"1.5s ReconciliationStarted rec-5 b attempt=1",
			"1.5s ResourceSynced rec-5 b attempt=1",
			"1.5s StatusSynced rec-5 b written",
			"1.5s StatusSynced rec-5 b written",
		}, lines(t, got))
	})
}

func TestRecordedOutcomesReplayInTheirPlaceAndRetryAtTheRecordedDistance(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		failed := func(key events.Key, attempt int, retryIn time.Duration, permanent bool) func(events.Meta) events.Event {
			return func(m events.Meta) events.Event {
				f := events.ResourceFailed{Meta: m, Key: key, Error: "boom", Attempt: attempt, Permanent: permanent}
				if retryIn > 0 {
					f.NextRetry = m.Time.Add(retryIn)
				}
				return f
			}
		}
		cfg := eventtrace.Config{Debounce: eventtrace.Duration(100 * time.Millisecond), MaxRetries: 1}
		tr := writeTrace(t, cfg,
			entry{0, indexSynced},
			entry{time.Second, changed(keyA, events.OperationCreate)},
			entry{time.Second, changed(keyB, events.OperationCreate)},
			// a: fails, is retried 1.234s later (a dependency's own retry
			// time, or jitter) and then succeeds.
			entry{1002 * time.Millisecond, failed(keyA, 1, 1234*time.Millisecond, false)},
			// b: fails twice; with MaxRetries 1 the second failure is final.
			entry{1003 * time.Millisecond, failed(keyB, 1, 1100*time.Millisecond, false)},
			entry{2103 * time.Millisecond, failed(keyB, 2, 0, false)},
			entry{2236 * time.Millisecond, synced(keyA)},
			// A change after b's final failure: b fails permanently.
			entry{3 * time.Second, changed(keyB, events.OperationUpdate)},
			entry{3001 * time.Millisecond, failed(keyB, 1, 0, true)},
		)
		got, err := replay.Replay(tr, replay.Options{Debouncer: true, Coordinator: true})
		require.NoError(t, err)
		assert.Equal(t, []string{
			"0s ReconciliationTriggered rec-1 index-synced []",
			// Each input is handled in full before the next.
			"1s ReconciliationTriggered rec-2 change [MCPServer/default/a]",
			"1s ReconciliationStarted rec-2 a attempt=1",
			"1s ResourceFailed rec-2 a attempt=1 retry=1.234s",
			"1s ReconciliationTriggered rec-3 change [MCPServer/default/b]",
			"1s ReconciliationStarted rec-3 b attempt=1",
			"1s ResourceFailed rec-3 b attempt=1 retry=1.1s",
			"2.1s ReconciliationStarted rec-3 b attempt=2",
			"2.1s ResourceFailed rec-3 b attempt=2 retry=none",
			"2.234s ReconciliationStarted rec-2 a attempt=2",
			"2.234s ResourceSynced rec-2 a attempt=2",
			"3s ReconciliationTriggered rec-8 change [MCPServer/default/b]",
			"3s ReconciliationStarted rec-8 b attempt=1",
			"3s ResourceFailed rec-8 b attempt=1 retry=none",
		}, lines(t, got))
		assert.Equal(t, outcomes(tr), outcomes(got), "the recorded sequence of outcomes per key")
		var final []events.ResourceFailed
		for _, e := range got.Entries {
			if f, ok := e.Event.(events.ResourceFailed); ok && !f.WillRetry() {
				final = append(final, f)
			}
		}
		require.Len(t, final, 2)
		assert.False(t, final[0].Permanent, "retries used up, as recorded")
		assert.True(t, final[1].Permanent, "permanent, as recorded")
	})
}

// outcomes returns each key's sequence of ResourceSynced and ResourceFailed,
// by type.
func outcomes(tr *eventtrace.Trace) map[events.Key][]string {
	out := map[events.Key][]string{}
	for _, e := range tr.Entries {
		switch v := e.Event.(type) {
		case events.ResourceSynced:
			out[v.Key] = append(out[v.Key], v.EventType())
		case events.ResourceFailed:
			out[v.Key] = append(out[v.Key], v.EventType())
		}
	}
	return out
}

// busyTrace is a trace made to tempt the scheduler: 40 keys changed 800
// times on a 10ms grid, so that inputs, refractory ends, retries and the 2s
// resync often fall on one instant; every fifth reconcile of a key failed
// and was retried 50ms later; service-state changes among them.
func busyTrace(t *testing.T) *eventtrace.Trace {
	cfg := eventtrace.Config{Debounce: eventtrace.Duration(100 * time.Millisecond), Resync: eventtrace.Duration(2 * time.Second)}
	entries := []entry{{0, indexSynced}}
	seed := uint64(42)
	next := func(n uint64) uint64 { seed = seed*6364136223846793005 + 1442695040888963407; return (seed >> 33) % n }
	at := time.Duration(0)
	reconciles := map[events.Key]int{}
	for range 800 {
		at += time.Duration(next(4)) * 10 * time.Millisecond
		key := events.NewKey("MCPServer", "", fmt.Sprintf("k%02d", next(40)))
		if next(10) == 0 {
			entries = append(entries, entry{at, func(m events.Meta) events.Event {
				return events.ServiceStateChanged{Meta: m, Key: key, State: "crashed", PreviousState: "running"}
			}})
			continue
		}
		entries = append(entries, entry{at, changed(key, events.OperationUpdate)})
		reconciles[key]++
		if reconciles[key]%5 == 0 {
			entries = append(entries, entry{at, func(m events.Meta) events.Event {
				return events.ResourceFailed{Meta: m, Key: key, Error: "boom", Attempt: 1, NextRetry: m.Time.Add(50 * time.Millisecond)}
			}})
		}
	}
	return writeTrace(t, cfg, entries...)
}

func TestTwoReplaysOfATraceAreByteIdentical(t *testing.T) {
	var runs [][]byte
	for range 2 {
		synctest.Test(t, func(t *testing.T) {
			got, err := replay.Replay(busyTrace(t), pipeline)
			require.NoError(t, err)
			require.Greater(t, len(got.Entries), 2000, "a replay with plenty to order")
			data, err := replay.Encode(got)
			require.NoError(t, err)
			runs = append(runs, data)
		})
	}
	assert.Empty(t, replay.Diff(runs[0], runs[1]))
	assert.True(t, bytes.Equal(runs[0], runs[1]), "two replays differ")
}

func TestAUsersComponentReceivesTheReplayedEvents(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tr := writeTrace(t, eventtrace.Config{Debounce: eventtrace.Duration(100 * time.Millisecond)},
			entry{0, indexSynced},
			entry{time.Second, changed(keyA, events.OperationCreate)},
			entry{1050 * time.Millisecond, changed(keyA, events.OperationUpdate)},
			entry{2 * time.Second, changed(keyB, events.OperationCreate)},
		)
		var counter *SyncCounter
		got, err := replay.Replay(tr, replay.Options{Debouncer: true, Coordinator: true,
			Components: []func(b *bus.Bus) lifecycle.Component{
				func(b *bus.Bus) lifecycle.Component { counter = NewSyncCounter(b); return counter },
			}})
		require.NoError(t, err)
		assert.EqualValues(t, 3, counter.Synced.Load(), "a at 1s and at its refractory end, b at 2s")
		assert.Equal(t, 3, len(outcomes(got)[keyA])+len(outcomes(got)[keyB]))
	})
}

func TestExampleReplay(t *testing.T) { synctest.Test(t, testSyncCounter) }

// fakeTB records what Golden reports.
type fakeTB struct {
	testing.TB
	errors, fatals []string
}

func (f *fakeTB) Helper() {}
func (f *fakeTB) Errorf(format string, a ...any) {
	f.errors = append(f.errors, fmt.Sprintf(format, a...))
}
func (f *fakeTB) Fatalf(format string, a ...any) {
	f.fatals = append(f.fatals, fmt.Sprintf(format, a...))
}

func TestAChangedDebounceIntervalFailsTheGoldenWithAReadableDiff(t *testing.T) {
	golden := filepath.Join(t.TempDir(), "small.golden")
	tr := func(t *testing.T, debounce time.Duration) *eventtrace.Trace {
		return writeTrace(t, eventtrace.Config{Debounce: eventtrace.Duration(debounce)},
			entry{0, indexSynced},
			entry{time.Second, changed(keyA, events.OperationCreate)},
			entry{1050 * time.Millisecond, changed(keyA, events.OperationUpdate)},
		)
	}
	synctest.Test(t, func(t *testing.T) {
		got, err := replay.Replay(tr(t, 100*time.Millisecond), pipeline)
		require.NoError(t, err)
		data, err := replay.Encode(got)
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(golden, data, 0o644))
		fake := &fakeTB{TB: t}
		replaytest.Golden(fake, got, golden)
		assert.Empty(t, fake.errors, "the same replay matches")
	})
	synctest.Test(t, func(t *testing.T) {
		got, err := replay.Replay(tr(t, 200*time.Millisecond), pipeline)
		require.NoError(t, err)
		fake := &fakeTB{TB: t}
		replaytest.Golden(fake, got, golden)
		require.Len(t, fake.errors, 1)
		msg := fake.errors[0]
		t.Logf("Golden reported:\n%s", msg)
		assert.Contains(t, msg, "differs from golden file "+golden)
		// The header line, which names the interval …
		assert.Contains(t, msg, `- {"format":"musterd-trace","version":1,"musterd":"test","start":"2000-01-01T00:00:00Z","config":{"debounce":"100ms"`)
		assert.Contains(t, msg, `+ {"format":"musterd-trace","version":1,"musterd":"test","start":"2000-01-01T00:00:00Z","config":{"debounce":"200ms"`)
		// … and the refractory-end trigger that moved from 1.1s to 1.2s.
		assert.Contains(t, msg, `- {"at":1100000000,"type":"ReconciliationTriggered"`)
		assert.Contains(t, msg, `+ {"at":1200000000,"type":"ReconciliationTriggered"`)
	})
}

func TestGoldenUpdateRewritesTheFile(t *testing.T) {
	golden := filepath.Join(t.TempDir(), "new", "x.golden")
	synctest.Test(t, func(t *testing.T) {
		got, err := replay.Replay(writeTrace(t, eventtrace.Config{}, entry{0, indexSynced}), pipeline)
		require.NoError(t, err)
		fake := &fakeTB{TB: t}
		replaytest.Golden(fake, got, golden)
		require.Len(t, fake.fatals, 1)
		assert.Contains(t, fake.fatals[0], "run the test with -update to write it")

		require.NoError(t, flag.Set("update", "true"))
		defer func() { require.NoError(t, flag.Set("update", "false")) }()
		replaytest.Golden(fake, got, golden)
		data, err := os.ReadFile(golden)
		require.NoError(t, err)
		want, err := replay.Encode(got)
		require.NoError(t, err)
		assert.Equal(t, string(want), string(data))
	})
}

func TestDiffShowsChangedLinesWithContextAndLineNumbers(t *testing.T) {
	want := "a\nb\nc\nd\ne\nf\ng\nh\ni\nj\n"
	got := "a\nb\nC\nd\ne\nf\ng\nh\ni\nj\nk\n"
	assert.Equal(t, `--- golden
+++ replay
@@ -1 +1 @@
  a
  b
- c
+ C
  d
  e
@@ -9 +9 @@
  i
  j
+ k
`, replay.Diff([]byte(want), []byte(got)))
	assert.Empty(t, replay.Diff([]byte(want), []byte(want)))

	var long, other strings.Builder
	for i := range 100 {
		fmt.Fprintf(&long, "line %d\n", i)
		fmt.Fprintf(&other, "LINE %d\n", i)
	}
	d := replay.Diff([]byte(long.String()), []byte(other.String()))
	assert.True(t, strings.HasSuffix(d, "… and 160 more changed lines\n"), d)
}

func TestReplayOutsideABubbleIsAnError(t *testing.T) {
	_, err := replay.Replay(&eventtrace.Trace{}, pipeline)
	assert.EqualError(t, err, "replay: Replay must be called inside a testing/synctest bubble (synctest.Test)")
}

func TestTheRecordedEventsOfAStageNotRunAreFedInItsPlace(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tr := writeTrace(t, eventtrace.Config{},
			entry{time.Second, func(m events.Meta) events.Event {
				return events.ReconciliationStarted{Meta: m, Key: keyA, Attempt: 1}
			}},
			entry{2 * time.Second, synced(keyA)},
		)
		got, err := replay.Replay(tr, replay.Options{StatusSync: true})
		require.NoError(t, err)
		assert.Equal(t, []string{
			"1s StatusSynced rec-1 a written",
			"2s StatusSynced rec-2 a written",
		}, lines(t, got), "the store alone, fed the coordinator's recorded events")
	})
}

// ReplayStepped gives Replay's bytes outside a bubble: for the busy trace
// of thousands of events (twice, byte-identical), and with a user's
// component subscribed.
func TestReplayStepped(t *testing.T) {
	t.Run("busy", func(t *testing.T) {
		var want []byte
		synctest.Test(t, func(t *testing.T) {
			got, err := replay.Replay(busyTrace(t), pipeline)
			require.NoError(t, err)
			want, err = replay.Encode(got)
			require.NoError(t, err)
		})
		for range 2 {
			got, err := replay.ReplayStepped(busyTrace(t), pipeline)
			require.NoError(t, err)
			data, err := replay.Encode(got)
			require.NoError(t, err)
			assert.Empty(t, replay.Diff(want, data))
		}
	})
	t.Run("a user's component", func(t *testing.T) {
		tr, err := eventtrace.ReadFile("../../../testdata/traces/delete-recreate.trace")
		require.NoError(t, err)
		var counter *SyncCounter
		got, err := replay.ReplayStepped(tr, replay.Options{Debouncer: true, Coordinator: true,
			Components: []func(b *bus.Bus) lifecycle.Component{
				func(b *bus.Bus) lifecycle.Component { counter = NewSyncCounter(b); return counter },
			}})
		require.NoError(t, err)
		assert.EqualValues(t, 3, counter.Synced.Load(), "created, deleted, created again")
		replaytest.Golden(t, got, "testdata/sync-counter.golden")
	})
}

// stuckComponent's handler never returns until released: a stage that
// never becomes quiescent.
type stuckComponent struct {
	bus     *bus.Bus
	ready   chan struct{}
	release chan struct{}
}

func (c *stuckComponent) Name() string                       { return "stuck" }
func (c *stuckComponent) SubscriptionReady() <-chan struct{} { return c.ready }

func (c *stuckComponent) Start(ctx context.Context) error {
	sub, err := bus.Subscribe(c.bus, c.Name(), bus.Unbounded(), func(events.ResourceSynced) { <-c.release })
	if err != nil {
		return err
	}
	close(c.ready)
	<-ctx.Done()
	sub.Unsubscribe() // its handler is stuck: Done would never close
	return nil
}

// A stepped replay whose stages cannot become quiescent fails within its
// SettleTimeout, naming what is busy, instead of hanging.
func TestReplaySteppedFailsNamingWhatIsBusyWhenTheStagesNeverSettle(t *testing.T) {
	tr, err := eventtrace.ReadFile("../../../testdata/traces/delete-recreate.trace")
	require.NoError(t, err)
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	_, err = replay.ReplayStepped(tr, replay.Options{Debouncer: true, Coordinator: true,
		SettleTimeout: 100 * time.Millisecond,
		Components: []func(b *bus.Bus) lifecycle.Component{
			func(b *bus.Bus) lifecycle.Component {
				return &stuckComponent{bus: b, ready: make(chan struct{}), release: release}
			},
		}})
	require.Error(t, err)
	assert.ErrorContains(t, err, "the stages were not quiescent at 2000-01-01T00:00:")
	assert.ErrorContains(t, err, "after 100ms of real time")
	assert.ErrorContains(t, err, "the bus of component 0 has events unhandled (a handler or OnIdle still running)")
}
