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

// retainedHandles is the most handles whose state an idle queue keeps; a
// burst's larger slices are dropped once the queue is empty and idle.
const retainedHandles = 1024

// Queue is a work queue of handles; see the package documentation.
type Queue struct {
	mu   sync.Mutex
	cond sync.Cond
	// ring holds the queued handles, oldest first.
	ring ring.Buffer[events.Handle]
	// slots are indexed by handle, in pages that never move as the queue
	// meets new handles (a slice grown to fit each new handle was copied
	// over and over through a burst). The times are kept only with
	// metrics. limit is one past the largest handle met.
	slots events.Records[slot]
	limit int
	// busy lists the handles being processed: at most one per worker, so
	// the unfinished-work scan is short.
	busy []events.Handle
	// peak is the most handles queued or busy since the queue was last
	// idle.
	peak     int
	shutdown bool
	stop     chan struct{}
	done     sync.WaitGroup

	clock clock.WithTicker
	// epoch is when the queue was made; a handle's times are kept as
	// offsets from it, read with clock.Since, which on the real clock
	// reads only the monotonic clock: half the cost of a Now, six times a
	// reconcile across the pipeline's two queues.
	epoch   time.Time
	metrics *metrics // nil without a provider
}

// slot is the queue's record of one handle.
type slot struct {
	state uint8
	// addedAt (while queued) and startedAt (while processing) are offsets
	// from the queue's epoch.
	addedAt, startedAt time.Duration
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
	q.limit = max(q.limit, int(h)+1)
	sl := q.slots.At(h)
	if sl.state&(queued|dirty) != 0 {
		return
	}
	if q.metrics != nil {
		q.metrics.adds.Inc()
		q.metrics.depth.Inc()
		sl.addedAt = q.now()
	}
	if sl.state&processing != 0 {
		sl.state |= dirty
		return
	}
	sl.state |= queued
	q.ring.Push(h)
	// Only here can the handles queued or busy grow in number: Done's
	// requeue moves one from busy to the ring.
	q.peak = max(q.peak, q.ring.Len()+len(q.busy))
	q.cond.Signal()
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
	h = q.ring.Pop()
	sl := q.slots.At(h)
	sl.state = sl.state&^queued | processing
	q.busy = append(q.busy, h)
	if q.metrics != nil {
		now := q.now()
		q.metrics.depth.Dec()
		sl.startedAt = now
		q.metrics.latency.Observe((now - sl.addedAt).Seconds())
		sl.addedAt = 0
	}
	return h, false
}

// Done ends the processing of h, queueing it again if it was added
// meanwhile.
func (q *Queue) Done(h events.Handle) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if int(h) >= q.limit {
		return
	}
	sl := q.slots.At(h)
	if sl.state&processing == 0 {
		return
	}
	for i, b := range q.busy {
		if b == h {
			q.busy[i] = q.busy[len(q.busy)-1]
			q.busy = q.busy[:len(q.busy)-1]
			break
		}
	}
	if q.metrics != nil {
		q.metrics.workDuration.Observe((q.now() - sl.startedAt).Seconds())
		sl.startedAt = 0
	}
	if sl.state&dirty != 0 {
		sl.state = queued
		q.ring.Push(h)
		q.cond.Signal()
		return
	}
	sl.state = 0
	if q.ring.Len() == 0 && len(q.busy) == 0 {
		// Idle: the slices a burst grew go once a fill stays small again;
		// dropping them after every large fill of a long stream would grow
		// them afresh each time.
		burst := q.peak > retainedHandles
		q.peak = 0
		if !burst && q.limit > retainedHandles {
			q.slots.Reset()
			q.ring.Reset()
			q.limit = 0
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
		for _, h := range q.busy {
			age := (q.now() - q.slots.At(h).startedAt).Seconds()
			total += age
			oldest = max(oldest, age)
		}
		q.mu.Unlock()
		q.metrics.unfinishedWork.Set(total)
		q.metrics.longestRunning.Set(oldest)
	}
}
