package statusync

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/musterd/musterd/pkg/bus"
	"github.com/musterd/musterd/pkg/events"
)

// metricsNamespace prefixes every metric, as "controller_runtime" does
// controller-runtime's.
const metricsNamespace = "musterd"

// Results of musterd_reconcile_total, as controller-runtime names them and
// the coordinator reports them to ObserveReconcile.
const (
	resultSuccess      = "success"
	resultError        = "error"
	resultRequeueAfter = "requeue_after"
)

// statusSyncFailed is the result of musterd_status_sync_total for a failed
// write; the others are the StatusSynced categories.
const statusSyncFailed = "failed"

// MetricsOptions configures Metrics.
type MetricsOptions struct {
	// Registerer receives the collectors. Required.
	Registerer prometheus.Registerer
	// Capacity bounds the subscription's lossy mailbox, which receives the
	// status-sync events. Default 8192. Drops are counted by the bus and
	// exported as musterd_bus_dropped_total.
	Capacity int
	// ActiveWorkers, if set, is exported as
	// musterd_active_workers{controller="coordinator"}.
	ActiveWorkers func() int
	// ReconcilePanics, if set, is exported as musterd_reconcile_panics_total.
	ReconcilePanics func() uint64
	// DebouncerCoalesced, if set, is exported as
	// musterd_debouncer_coalesced_total.
	DebouncerCoalesced func() uint64
}

// Metrics exports reconcile, status-sync and bus metrics to Prometheus. Make
// it with NewMetrics. Reconciles are counted as ObserveReconcile reports
// them (it is a coordinator.Observer), from registration on; status writes
// are counted from the bus once Start runs.
type Metrics struct {
	bus      *bus.Bus
	capacity int
	attached bus.Attachment
	starts   atomic.Bool

	reconcileTotal     *prometheus.CounterVec
	reconcileErrors    *prometheus.CounterVec
	reconcileTime      *prometheus.HistogramVec
	statusSyncTotal    *prometheus.CounterVec
	statusSyncFailures *prometheus.CounterVec

	// kinds maps a kind to its *kindSeries, made at its first reconcile.
	kinds sync.Map
}

// NewMetrics registers the metrics of b's events and stats with
// opts.Registerer. It fails, registering nothing, if a metric is registered
// already.
func NewMetrics(b *bus.Bus, opts MetricsOptions) (*Metrics, error) {
	if opts.Registerer == nil {
		return nil, errors.New("metrics: MetricsOptions.Registerer is required")
	}
	m := &Metrics{
		bus:      b,
		capacity: cmp.Or(opts.Capacity, 8192),
		reconcileTotal: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: metricsNamespace, Name: "reconcile_total",
			Help: "Total number of reconciliations per kind and result (success, error, requeue_after).",
		}, []string{"kind", "result"}),
		reconcileErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: metricsNamespace, Name: "reconcile_errors_total",
			Help: "Total number of reconciliation errors per kind.",
		}, []string{"kind"}),
		reconcileTime: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: metricsNamespace, Name: "reconcile_time_seconds",
			Help: "Length of time per reconciliation per kind.",
			// controller-runtime's buckets, so that dashboards carry over.
			Buckets: []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.6, 0.7, 0.8,
				0.9, 1.0, 1.25, 1.5, 1.75, 2.0, 2.5, 3.0, 3.5, 4.0, 4.5, 5, 6, 7, 8, 9, 10, 15, 20, 25, 30, 40, 50, 60},
			NativeHistogramBucketFactor:     1.1,
			NativeHistogramMaxBucketNumber:  100,
			NativeHistogramMinResetDuration: time.Hour,
		}, []string{"kind"}),
		statusSyncTotal: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: metricsNamespace, Name: "status_sync_total",
			Help: "Total number of status writes per result (written, unchanged, deleted, skipped, failed).",
		}, []string{"result"}),
		statusSyncFailures: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: metricsNamespace, Name: "status_sync_failures_total",
			Help: "Total number of failed status writes per failure category.",
		}, []string{"category"}),
	}
	// Zero series from the start, so that rate() sees a first increase.
	for _, result := range []string{events.StatusWritten, events.StatusUnchanged, events.StatusDeleted, events.StatusSkipped, statusSyncFailed} {
		m.statusSyncTotal.WithLabelValues(result)
	}

	type named struct {
		name string
		prometheus.Collector
	}
	collectors := []named{
		{"musterd_reconcile_total", m.reconcileTotal},
		{"musterd_reconcile_errors_total", m.reconcileErrors},
		{"musterd_reconcile_time_seconds", m.reconcileTime},
		{"musterd_status_sync_total", m.statusSyncTotal},
		{"musterd_status_sync_failures_total", m.statusSyncFailures},
		{"musterd_bus_*", newBusCollector(b)},
	}
	if f := opts.ActiveWorkers; f != nil {
		collectors = append(collectors, named{"musterd_active_workers", prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Namespace: metricsNamespace, Name: "active_workers",
			Help:        "Number of workers reconciling right now.",
			ConstLabels: prometheus.Labels{"controller": "coordinator"},
		}, func() float64 { return float64(f()) })})
	}
	if f := opts.ReconcilePanics; f != nil {
		collectors = append(collectors, named{"musterd_reconcile_panics_total", prometheus.NewCounterFunc(prometheus.CounterOpts{
			Namespace: metricsNamespace, Name: "reconcile_panics_total",
			Help: "Total number of reconciler panics.",
		}, func() float64 { return float64(f()) })})
	}
	if f := opts.DebouncerCoalesced; f != nil {
		collectors = append(collectors, named{"musterd_debouncer_coalesced_total", prometheus.NewCounterFunc(prometheus.CounterOpts{
			Namespace: metricsNamespace, Name: "debouncer_coalesced_total",
			Help: "Total number of changes the debouncer folded into an already pending trigger.",
		}, func() float64 { return float64(f()) })})
	}
	for i, c := range collectors {
		if err := opts.Registerer.Register(c.Collector); err != nil {
			for _, done := range collectors[:i] {
				opts.Registerer.Unregister(done.Collector)
			}
			return nil, fmt.Errorf("metrics: register %s: %w", c.name, err)
		}
	}
	return m, nil
}

// Name is the component's name, also its bus subscription's.
func (m *Metrics) Name() string { return "metrics" }

// SubscriptionReady is closed once Start has subscribed to the bus.
func (m *Metrics) SubscriptionReady() <-chan struct{} { return m.attached.SubscriptionReady() }

// BusySince reports since when the event handler has been running, if it
// is.
func (m *Metrics) BusySince() (time.Time, bool) { return m.attached.BusySince() }

// Start subscribes to the bus and counts status-sync events until ctx is
// done. It may be called once.
func (m *Metrics) Start(ctx context.Context) error {
	if !m.starts.CompareAndSwap(false, true) {
		return errors.New("metrics: started twice")
	}
	sub, err := m.bus.Subscribe(bus.SubscriberOptions{
		Name:     m.Name(),
		Delivery: bus.Lossy(m.capacity),
		Handlers: []bus.Handler{
			bus.On(func(e events.StatusSynced) { m.statusSyncTotal.WithLabelValues(e.Category).Inc() }),
			bus.On(func(e events.StatusSyncFailed) {
				m.statusSyncTotal.WithLabelValues(statusSyncFailed).Inc()
				m.statusSyncFailures.WithLabelValues(e.Category).Inc()
			}),
		},
	})
	if err != nil {
		return fmt.Errorf("metrics: %w", err)
	}
	m.attached.Attach(sub)
	<-ctx.Done()
	sub.Unsubscribe()
	<-sub.Done()
	return nil
}

// ObserveReconcile counts one finished reconcile of kind: result is
// "success", "error" or "requeue_after", took how long it ran. It makes
// Metrics a coordinator.Observer: counted where reconciles finish, not from
// the lossy bus subscription, the reconcile metrics are exact. It is safe
// for concurrent use.
func (m *Metrics) ObserveReconcile(kind, result string, took time.Duration) {
	s := m.seriesOf(kind)
	switch result {
	case resultSuccess:
		s.success.Inc()
	case resultError:
		s.failure.Inc()
		s.errors.Inc()
	case resultRequeueAfter:
		s.requeue.Inc()
	default:
		m.reconcileTotal.WithLabelValues(kind, result).Inc()
	}
	s.took.Observe(took.Seconds())
}

// kindSeries are one kind's reconcile series, looked up once: a vector's
// WithLabelValues hashes its labels on every call, which the no-op
// benchmark showed per reconcile.
type kindSeries struct {
	success, failure, requeue, errors prometheus.Counter
	took                              prometheus.Observer
}

// seriesOf returns kind's series, making them at its first reconcile: like
// controller-runtime at a controller's start, every result of a kind
// exists from then on.
func (m *Metrics) seriesOf(kind string) *kindSeries {
	if s, ok := m.kinds.Load(kind); ok {
		return s.(*kindSeries)
	}
	s, _ := m.kinds.LoadOrStore(kind, &kindSeries{
		success: m.reconcileTotal.WithLabelValues(kind, resultSuccess),
		failure: m.reconcileTotal.WithLabelValues(kind, resultError),
		requeue: m.reconcileTotal.WithLabelValues(kind, resultRequeueAfter),
		errors:  m.reconcileErrors.WithLabelValues(kind),
		took:    m.reconcileTime.WithLabelValues(kind),
	})
	return s.(*kindSeries)
}
