package keyqueue

import (
	"sync"
	"time"

	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"

	"github.com/musterd/musterd/internal/ring"
	"github.com/musterd/musterd/pkg/events"
)

// Config configures a Queue. The zero value is a queue without metrics on
// the real clock.
type Config struct {
	// Name names the queue's metrics.
	Name string
	// MetricsProvider, if set, receives the queue's metrics.
	MetricsProvider workqueue.MetricsProvider
	// Clock times the metrics. Default: the real clock.
	Clock clock.WithTicker
}

// Per-handle state bits.
const (
	queued     uint8 = 1 << iota // in the ring, not taken yet
	processing                   // taken by Get, not yet Done
	dirty                        // added while processing: queued again on Done
)

// unfinishedWorkPeriod is how often the unfinished-work metrics are
// refreshed, client-go's period.
const unfinishedWorkPeriod = 500 * time.Millisecond

// retainedHandles is the longest ring an idle queue keeps; a burst's
// longer ring is dropped once the queue is empty and idle.
const retainedHandles = 1024

// quietTicksBeforeRelease is how many of the metrics goroutine's ticks
// (unfinishedWorkPeriod apart) without an Add let an empty queue drop the
// ring a burst grew, which the next small fill would otherwise drop: at
// rest after a cold start there is none, and a daemon's two queues would
// keep the rings of its largest burst for life. 10 s, as the
// debouncer waits before it lets go of a burst's tables.
const quietTicksBeforeRelease = 20

// Queue is a work queue of handles; see the package documentation.
type Queue struct {
	mu   sync.Mutex
	cond sync.Cond
	// ring holds the queued handles, oldest first.
	ring ring.Buffer[waiting]
	// state is each handle's bits, indexed by handle: one byte a handle
	// its owner ever queued, kept for the queue's life. The owner's
	// handles are dense and it keeps them while their resources exist, so
	// this is a byte per resource; the times live with the few handles
	// queued or busy. (Per-handle records with the times, dropped whenever
	// the queue fell idle, would be allocated anew up to each next handle:
	// a paced resync lets the queue fall idle after every key.)
	state []uint8
	// busy lists the handles being processed: at most one per worker, so
	// the unfinished-work scan is short.
	busy []running
	// peak is the most handles queued or busy since the queue was last
	// idle.
	peak int
	// added: Add was called since the metrics goroutine's last tick;
	// quietTicks counts its ticks since one that saw an Add.
	added      bool
	quietTicks int
	shutdown   bool
	stop       chan struct{}
	done       sync.WaitGroup

	clock clock.WithTicker
	// epoch is when the queue was made; a handle's times are kept as
	// offsets from it, read with clock.Since, which on the real clock
	// reads only the monotonic clock: half the cost of a Now, six times a
	// reconcile across the pipeline's two queues.
	epoch   time.Time
	metrics *metrics // nil without a provider
}

// waiting is a queued handle, with when it was added (an offset from the
// queue's epoch; kept only with metrics).
type waiting struct {
	h       events.Handle
	addedAt time.Duration
}

// running is a handle being processed: since when, and, if it was added
// again meanwhile, when.
type running struct {
	h                  events.Handle
	startedAt, addedAt time.Duration
}

type metrics struct {
	depth                          workqueue.GaugeMetric
	adds                           workqueue.CounterMetric
	latency, workDuration          workqueue.HistogramMetric
	unfinishedWork, longestRunning workqueue.SettableGaugeMetric
}

// New returns a queue. With metrics, it runs a goroutine until ShutDown.
func New(cfg Config) *Queue {
	q := &Queue{clock: cfg.Clock, stop: make(chan struct{})}
	if q.clock == nil {
		q.clock = clock.RealClock{}
	}
	q.epoch = q.clock.Now()
	q.cond.L = &q.mu
	if p := cfg.MetricsProvider; p != nil {
		q.metrics = &metrics{
			depth:          p.NewDepthMetric(cfg.Name),
			adds:           p.NewAddsMetric(cfg.Name),
			latency:        p.NewLatencyMetric(cfg.Name),
			workDuration:   p.NewWorkDurationMetric(cfg.Name),
			unfinishedWork: p.NewUnfinishedWorkSecondsMetric(cfg.Name),
			longestRunning: p.NewLongestRunningProcessorSecondsMetric(cfg.Name),
		}
		q.done.Go(q.unfinishedWorkLoop)
	}
	return q
}

// now is the time since the queue's epoch.
func (q *Queue) now() time.Duration { return q.clock.Since(q.epoch) }

// Add queues h unless it is queued already; a handle being processed is
// queued again once Done. After ShutDown, Add does nothing.
func (q *Queue) Add(h events.Handle) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.shutdown {
		return
	}
	if n := int(h) + 1; n > len(q.state) {
		q.state = append(q.state, make([]uint8, n-len(q.state))...)
	}
	q.added = true
	st := &q.state[h]
	if *st&(queued|dirty) != 0 {
		return
	}
	var now time.Duration
	if q.metrics != nil {
		q.metrics.adds.Inc()
		q.metrics.depth.Inc()
		now = q.now()
	}
	if *st&processing != 0 {
		*st |= dirty
		q.busy[q.busyIndex(h)].addedAt = now
		return
	}
	*st |= queued
	q.ring.Push(waiting{h: h, addedAt: now})
	// Only here can the handles queued or busy grow in number: Done's
	// requeue moves one from busy to the ring.
	q.peak = max(q.peak, q.ring.Len()+len(q.busy))
	q.cond.Signal()
}

// busyIndex is h's place in busy; h is processing.
func (q *Queue) busyIndex(h events.Handle) int {
	for i, r := range q.busy {
		if r.h == h {
			return i
		}
	}
	panic("keyqueue: a processing handle is not busy")
}

// Get waits for a queued handle and takes it: it is processing until
// Done. shutdown is true once the queue is shut down and empty.
func (q *Queue) Get() (h events.Handle, shutdown bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for q.ring.Len() == 0 && !q.shutdown {
		q.cond.Wait()
	}
	if q.ring.Len() == 0 {
		return 0, true
	}
	w := q.ring.Pop()
	q.state[w.h] = q.state[w.h]&^queued | processing
	r := running{h: w.h}
	if q.metrics != nil {
		r.startedAt = q.now()
		q.metrics.depth.Dec()
		q.metrics.latency.Observe((r.startedAt - w.addedAt).Seconds())
	}
	q.busy = append(q.busy, r)
	return w.h, false
}

// Done ends the processing of h, queueing it again if it was added
// meanwhile.
func (q *Queue) Done(h events.Handle) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if int(h) >= len(q.state) || q.state[h]&processing == 0 {
		return
	}
	i := q.busyIndex(h)
	r := q.busy[i]
	q.busy[i] = q.busy[len(q.busy)-1]
	q.busy = q.busy[:len(q.busy)-1]
	if q.metrics != nil {
		q.metrics.workDuration.Observe((q.now() - r.startedAt).Seconds())
	}
	if q.state[h]&dirty != 0 {
		q.state[h] = queued
		q.ring.Push(waiting{h: h, addedAt: r.addedAt})
		q.cond.Signal()
		return
	}
	q.state[h] = 0
	if q.ring.Len() == 0 && len(q.busy) == 0 {
		// Idle: the ring a burst grew goes once a fill stays small again;
		// dropping it after every large fill of a long stream would grow
		// it afresh each time.
		burst := q.peak > retainedHandles
		q.peak = 0
		if !burst && q.ring.Cap() > retainedHandles {
			q.ring.Reset()
		}
	}
}

// Len returns how many handles are queued.
func (q *Queue) Len() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.ring.Len()
}

// ShutDown stops the queue: Add does nothing from now on, and Get reports
// shutdown once what is queued has been taken. It waits for the metrics
// goroutine.
func (q *Queue) ShutDown() {
	q.mu.Lock()
	if !q.shutdown {
		q.shutdown = true
		close(q.stop)
	}
	q.cond.Broadcast()
	q.mu.Unlock()
	q.done.Wait()
}

// releaseIfQuiet drops the ring a burst grew once the queue has been empty
// and had no Add for quietTicksBeforeRelease ticks; q.mu is held.
func (q *Queue) releaseIfQuiet() {
	if q.added || q.ring.Len() > 0 || len(q.busy) > 0 {
		q.added, q.quietTicks = false, 0
		return
	}
	if q.quietTicks++; q.quietTicks >= quietTicksBeforeRelease && q.ring.Cap() > retainedHandles {
		q.ring.Reset()
		q.peak = 0
	}
}

func (q *Queue) unfinishedWorkLoop() {
	t := q.clock.NewTicker(unfinishedWorkPeriod)
	defer t.Stop()
	for {
		select {
		case <-t.C():
		case <-q.stop:
			return
		}
		q.mu.Lock()
		var total, oldest float64
		for _, r := range q.busy {
			age := (q.now() - r.startedAt).Seconds()
			total += age
			oldest = max(oldest, age)
		}
		q.releaseIfQuiet()
		q.mu.Unlock()
		q.metrics.unfinishedWork.Set(total)
		q.metrics.longestRunning.Set(oldest)
	}
}
