package keyqueue_test

import (
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/client-go/util/workqueue"

	"github.com/musterd/musterd/pkg/events"
	"github.com/musterd/musterd/pkg/keyqueue"
)

// get takes the next handle, failing the test on shutdown.
func get(t *testing.T, q *keyqueue.Queue) events.Handle {
	t.Helper()
	h, shutdown := q.Get()
	require.False(t, shutdown)
	return h
}

// Fair: handles come out in the order they were first added, however
// large the queue grew meanwhile (the ring wraps and grows).
func TestHandlesComeOutInTheOrderFirstAdded(t *testing.T) {
	q := keyqueue.New(keyqueue.Config{})
	defer q.ShutDown()
	var want []events.Handle
	for i := range 50 { // wrap the ring before it grows
		q.Add(events.Handle(i))
		want = append(want, events.Handle(i))
	}
	var got []events.Handle
	for range 30 {
		h := get(t, q)
		got = append(got, h)
		q.Done(h)
	}
	for i := 50; i < 300; i++ {
		q.Add(events.Handle(i))
		want = append(want, events.Handle(i))
	}
	for q.Len() > 0 {
		h := get(t, q)
		got = append(got, h)
		q.Done(h)
	}
	assert.Equal(t, want, got)
}

// Stingy: a handle added many times before a worker takes it comes out
// once, in its first place.
func TestAHandleAddedManyTimesComesOutOnce(t *testing.T) {
	q := keyqueue.New(keyqueue.Config{})
	defer q.ShutDown()
	q.Add(7)
	q.Add(3)
	q.Add(7)
	q.Add(7)
	assert.Equal(t, 2, q.Len())
	assert.Equal(t, events.Handle(7), get(t, q))
	assert.Equal(t, events.Handle(3), get(t, q))
	assert.Equal(t, 0, q.Len())
}

// One worker per handle, and dirty requeue: a handle added while it is
// processed is not handed out until Done, and then exactly once more.
func TestAHandleAddedWhileProcessedComesOutOnceMoreAfterDone(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := keyqueue.New(keyqueue.Config{})
		defer q.ShutDown()
		q.Add(1)
		first := get(t, q)
		q.Add(1)
		q.Add(1)
		assert.Equal(t, 0, q.Len(), "not queued while processed")

		var second atomic.Int64
		second.Store(-1)
		go func() {
			h, shutdown := q.Get()
			if !shutdown {
				second.Store(int64(h))
				q.Done(h)
			}
		}()
		synctest.Wait()
		assert.Equal(t, int64(-1), second.Load(), "no second worker gets a handle being processed")
		q.Done(first)
		synctest.Wait()
		assert.Equal(t, int64(1), second.Load(), "it comes out once more after Done")
		assert.Equal(t, 0, q.Len(), "and only once")
	})
}

// Under many workers and adders, no handle is ever processed by two
// workers at once, and every add is followed by a processing of its handle
// that began after it. Each processing lasts a virtual millisecond, so that
// adds land on handles being processed and a second worker would overlap.
func TestNoHandleIsEverProcessedByTwoWorkersAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := keyqueue.New(keyqueue.Config{})
		const handles, adds, workers = 16, 4000, 4
		var inside [handles]atomic.Int32
		var addedAt, startedAt [handles]atomic.Int64 // sequence numbers
		var seq atomic.Int64
		var twice atomic.Bool
		var wg sync.WaitGroup
		for range workers {
			wg.Go(func() {
				for {
					h, shutdown := q.Get()
					if shutdown {
						return
					}
					if inside[h].Add(1) != 1 {
						twice.Store(true)
					}
					startedAt[h].Store(seq.Add(1))
					time.Sleep(time.Millisecond)
					inside[h].Add(-1)
					q.Done(h)
				}
			})
		}
		for i := range adds {
			h := events.Handle(i % handles)
			addedAt[h].Store(seq.Add(1))
			q.Add(h)
			if i%7 == 0 {
				time.Sleep(300 * time.Microsecond)
			}
		}
		// ShutDown lets the workers take what is queued, and what a Done
		// queues again, before Get reports shutdown.
		q.ShutDown()
		wg.Wait()
		for h := range handles {
			assert.GreaterOrEqual(t, startedAt[h].Load(), addedAt[h].Load(), "handle %d: its last add was processed", h)
		}
		assert.False(t, twice.Load(), "a handle was processed by two workers at once")
	})
}

// ShutDown: Add does nothing, Get hands out what is queued, then reports
// shutdown; a waiting Get wakes.
func TestShutDownDrainsWhatIsQueuedThenReportsShutdown(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := keyqueue.New(keyqueue.Config{})
		q.Add(1)
		q.Add(2)
		q.ShutDown()
		q.Add(3)
		assert.Equal(t, events.Handle(1), get(t, q))
		assert.Equal(t, events.Handle(2), get(t, q))
		_, shutdown := q.Get()
		assert.True(t, shutdown)

		idle := keyqueue.New(keyqueue.Config{})
		woke := make(chan bool, 1)
		go func() { _, s := idle.Get(); woke <- s }()
		synctest.Wait()
		idle.ShutDown()
		assert.True(t, <-woke)
	})
}

// The metrics are client-go's: adds and depth per first add, queue latency
// on Get, work duration on Done, and the unfinished work refreshed every
// 500 ms; exact in virtual time.
func TestMetricsAreClientGosInExactVirtualTime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := &fakeMetrics{}
		q := keyqueue.New(keyqueue.Config{Name: "test", MetricsProvider: m})
		q.Add(1)
		q.Add(1)
		q.Add(2)
		assert.Equal(t, 2.0, m.adds.v)
		assert.Equal(t, 2.0, m.depth.v)
		time.Sleep(time.Second)
		h := get(t, q)
		assert.Equal(t, 1.0, m.depth.v)
		assert.Equal(t, []float64{1}, m.latency.obs)
		time.Sleep(1200 * time.Millisecond) // two refreshes: at 1.5 s and 2 s
		synctest.Wait()
		assert.Equal(t, 1.0, m.unfinished.v)
		assert.Equal(t, 1.0, m.longest.v)
		q.Done(h)
		assert.Equal(t, []float64{1.2}, m.work.obs)
		q.ShutDown()
		assert.Equal(t, "test", m.name)
	})
}

type fakeMetrics struct {
	name                             string
	depth, adds, unfinished, longest fakeMetric
	latency, work                    fakeMetric
}

type fakeMetric struct {
	mu  sync.Mutex
	v   float64
	obs []float64
}

func (f *fakeMetric) Inc()              { f.mu.Lock(); f.v++; f.mu.Unlock() }
func (f *fakeMetric) Dec()              { f.mu.Lock(); f.v--; f.mu.Unlock() }
func (f *fakeMetric) Set(v float64)     { f.mu.Lock(); f.v = v; f.mu.Unlock() }
func (f *fakeMetric) Observe(v float64) { f.mu.Lock(); f.obs = append(f.obs, v); f.mu.Unlock() }

func (m *fakeMetrics) NewDepthMetric(name string) workqueue.GaugeMetric {
	m.name = name
	return &m.depth
}
func (m *fakeMetrics) NewAddsMetric(string) workqueue.CounterMetric      { return &m.adds }
func (m *fakeMetrics) NewLatencyMetric(string) workqueue.HistogramMetric { return &m.latency }
func (m *fakeMetrics) NewWorkDurationMetric(string) workqueue.HistogramMetric {
	return &m.work
}
func (m *fakeMetrics) NewUnfinishedWorkSecondsMetric(string) workqueue.SettableGaugeMetric {
	return &m.unfinished
}
func (m *fakeMetrics) NewLongestRunningProcessorSecondsMetric(string) workqueue.SettableGaugeMetric {
	return &m.longest
}
func (m *fakeMetrics) NewRetriesMetric(string) workqueue.CounterMetric { return &fakeMetric{} }

// A handle added again while processed waits from that add: its latency
// counts from there, and its work duration from its second Get.
func TestARequeuedHandlesLatencyCountsFromItsAddInExactVirtualTime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := &fakeMetrics{}
		q := keyqueue.New(keyqueue.Config{Name: "test", MetricsProvider: m})
		defer q.ShutDown()
		q.Add(7)
		h := get(t, q)
		time.Sleep(time.Second)
		q.Add(7) // dirty: waits from now
		assert.Equal(t, 1.0, m.depth.v)
		time.Sleep(300 * time.Millisecond)
		q.Done(h)
		time.Sleep(200 * time.Millisecond)
		h = get(t, q)
		assert.Equal(t, events.Handle(7), h)
		assert.Equal(t, []float64{0, 0.5}, m.latency.obs)
		assert.Equal(t, 0.0, m.depth.v)
		time.Sleep(100 * time.Millisecond)
		q.Done(h)
		assert.Equal(t, []float64{1.3, 0.1}, m.work.obs)
	})
}

// A queue that falls idle after each handle, as a paced resync of many
// resources makes it, allocates nothing per handle, however large the
// handles: its per-handle state stays, the times live with the handle.
func TestAnIdleCycleAtALargeHandleAllocatesNothing(t *testing.T) {
	q := keyqueue.New(keyqueue.Config{})
	defer q.ShutDown()
	cycle := func(h events.Handle) {
		q.Add(h)
		q.Done(get(t, q))
	}
	cycle(99_999) // the state grows once to the largest handle
	next := events.Handle(0)
	allocs := testing.AllocsPerRun(100, func() {
		cycle(50_000 + next*499)
		next++
	})
	assert.Zero(t, allocs)
}

// The ring a burst grew goes once the queue has been empty, with no Add,
// for 10 s of its metrics goroutine's ticks, and not a tick earlier; an Add
// meanwhile starts the wait again, and the ring of a small fill stays.
func TestABurstsRingGoesAfterTenQuietSeconds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := keyqueue.New(keyqueue.Config{Name: "test", MetricsProvider: &fakeMetrics{}})
		defer q.ShutDown()
		fill := func(n int) {
			for h := range n {
				q.Add(events.Handle(h))
			}
			for range n {
				q.Done(get(t, q))
			}
		}
		fill(5000)
		grown := keyqueue.RingCap(q)
		require.Greater(t, grown, 1024)

		// Ticks come every 500 ms from the start. The first quiet one is
		// at 1 s; a second burst at 7.25 s, before the 20th, makes the
		// tick at 7.5 s the last to see an Add, so the 20th quiet tick
		// is at 17.5 s.
		time.Sleep(7250 * time.Millisecond)
		fill(5000)
		time.Sleep(10240 * time.Millisecond) // 17.49 s
		synctest.Wait()
		assert.Equal(t, grown, keyqueue.RingCap(q), "kept until the 20th quiet tick")
		time.Sleep(20 * time.Millisecond) // 17.51 s
		synctest.Wait()
		assert.Zero(t, keyqueue.RingCap(q), "dropped at the 20th quiet tick")

		fill(10)
		small := keyqueue.RingCap(q)
		time.Sleep(time.Minute)
		synctest.Wait()
		assert.Equal(t, small, keyqueue.RingCap(q), "a small ring stays")
	})
}
