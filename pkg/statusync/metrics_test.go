package statusync_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/client-go/util/workqueue"

	"github.com/musterd/musterd/pkg/bus"
	"github.com/musterd/musterd/pkg/coordinator"
	"github.com/musterd/musterd/pkg/events"
	"github.com/musterd/musterd/pkg/statusync"
)

// startMetrics runs a Metrics subscriber on a started bus; the returned
// func stops both.
func startMetrics(t *testing.T, opts statusync.MetricsOptions) (*statusync.Metrics, *bus.Bus, *prometheus.Registry, func()) {
	reg := prometheus.NewRegistry()
	opts.Registerer = reg
	b := bus.New(bus.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	m, err := statusync.NewMetrics(b, opts)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- m.Start(ctx) }()
	<-m.SubscriptionReady()
	b.Start()
	return m, b, reg, func() {
		cancel()
		require.NoError(t, <-done)
		b.Close()
	}
}

// histogram returns the sample count and sum of one histogram series.
func histogram(t *testing.T, g prometheus.Gatherer, name, labelValue string) (uint64, float64) {
	t.Helper()
	families, err := g.Gather()
	require.NoError(t, err)
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetValue() == labelValue {
					return m.GetHistogram().GetSampleCount(), m.GetHistogram().GetSampleSum()
				}
			}
		}
	}
	t.Fatalf("no series of %s with label value %q", name, labelValue)
	return 0, 0
}

func TestMetricsCountReconcilesAndStatusWrites(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m, b, reg, stop := startMetrics(t, statusync.MetricsOptions{
			ActiveWorkers:      func() int { return 3 },
			ReconcilePanics:    func() uint64 { return 2 },
			DebouncerCoalesced: func() uint64 { return 7 },
		})
		defer stop()
		server, workflow := events.NewKey("MCPServer", "", "git"), events.NewKey("Workflow", "", "deploy")
		var observer coordinator.Observer = m // reconciles are counted where they finish
		observer.ObserveReconcile("MCPServer", coordinator.ResultSuccess, 1500*time.Millisecond)
		observer.ObserveReconcile("MCPServer", coordinator.ResultRequeueAfter, 250*time.Millisecond)
		observer.ObserveReconcile("MCPServer", coordinator.ResultError, 500*time.Millisecond)
		observer.ObserveReconcile("Workflow", coordinator.ResultError, 2*time.Second)
		observer.ObserveReconcile("Workflow", coordinator.ResultSuccess, 125*time.Millisecond)
		for _, e := range []events.Event{
			// Reconcile events on the bus are not counted again.
			events.ResourceSynced{Key: server, Duration: time.Second},
			events.ResourceFailed{Key: workflow, Duration: time.Second, Error: "x"},
			events.StatusSynced{Key: server, Category: events.StatusWritten},
			events.StatusSynced{Key: server, Category: events.StatusWritten},
			events.StatusSynced{Key: server, Category: events.StatusUnchanged},
			events.StatusSyncFailed{Key: server, Category: "timeout", Attempt: 1},
			events.StatusSyncFailed{Key: server, Category: "timeout", Attempt: 2},
			events.StatusSyncFailed{Key: workflow, Category: "conflict", Attempt: 1},
		} {
			b.Publish(e)
		}
		synctest.Wait()

		assert.NoError(t, testutil.GatherAndCompare(reg, strings.NewReader(`
# HELP musterd_reconcile_total Total number of reconciliations per kind and result (success, error, requeue_after).
# TYPE musterd_reconcile_total counter
musterd_reconcile_total{kind="MCPServer",result="error"} 1
musterd_reconcile_total{kind="MCPServer",result="requeue_after"} 1
musterd_reconcile_total{kind="MCPServer",result="success"} 1
musterd_reconcile_total{kind="Workflow",result="error"} 1
musterd_reconcile_total{kind="Workflow",result="requeue_after"} 0
musterd_reconcile_total{kind="Workflow",result="success"} 1
# HELP musterd_reconcile_errors_total Total number of reconciliation errors per kind.
# TYPE musterd_reconcile_errors_total counter
musterd_reconcile_errors_total{kind="MCPServer"} 1
musterd_reconcile_errors_total{kind="Workflow"} 1
# HELP musterd_status_sync_total Total number of status writes per result (written, unchanged, deleted, skipped, failed).
# TYPE musterd_status_sync_total counter
musterd_status_sync_total{result="deleted"} 0
musterd_status_sync_total{result="failed"} 3
musterd_status_sync_total{result="skipped"} 0
musterd_status_sync_total{result="unchanged"} 1
musterd_status_sync_total{result="written"} 2
# HELP musterd_status_sync_failures_total Total number of failed status writes per failure category.
# TYPE musterd_status_sync_failures_total counter
musterd_status_sync_failures_total{category="conflict"} 1
musterd_status_sync_failures_total{category="timeout"} 2
# HELP musterd_active_workers Number of workers reconciling right now.
# TYPE musterd_active_workers gauge
musterd_active_workers{controller="coordinator"} 3
# HELP musterd_reconcile_panics_total Total number of reconciler panics.
# TYPE musterd_reconcile_panics_total counter
musterd_reconcile_panics_total 2
# HELP musterd_debouncer_coalesced_total Total number of changes the debouncer folded into an already pending trigger.
# TYPE musterd_debouncer_coalesced_total counter
musterd_debouncer_coalesced_total 7
`), "musterd_reconcile_total", "musterd_reconcile_errors_total", "musterd_status_sync_total",
			"musterd_status_sync_failures_total", "musterd_active_workers", "musterd_reconcile_panics_total",
			"musterd_debouncer_coalesced_total"))

		count, sum := histogram(t, reg, "musterd_reconcile_time_seconds", "MCPServer")
		assert.Equal(t, uint64(3), count)
		assert.Equal(t, 2.25, sum)
		count, sum = histogram(t, reg, "musterd_reconcile_time_seconds", "Workflow")
		assert.Equal(t, uint64(2), count)
		assert.Equal(t, 2.125, sum)
	})
}

func TestBusCollectorExportsStats(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		_, b, reg, stop := startMetrics(t, statusync.MetricsOptions{})
		defer stop()
		release, hold := make(chan struct{}), make(chan struct{})
		_, err := bus.Subscribe(b, "slow", bus.Lossy(1), func(events.ResourceChanged) { <-release })
		require.NoError(t, err)
		_, err = bus.Subscribe(b, "panicky", bus.Coalescing(bus.ByTypeAndResourceKey), func(events.ResourceChanged) { panic("boom") })
		require.NoError(t, err)
		_, err = bus.Subscribe(b, "merging", bus.Coalescing(bus.ByTypeAndResourceKey), func(events.ResourceChanged) { <-hold })
		require.NoError(t, err)
		defer close(hold)

		changed := events.ResourceChanged{Key: gitKey}
		b.Publish(changed)
		synctest.Wait()    // "slow" and "merging" are now blocked in their handlers
		b.Publish(changed) // waits in the mailboxes
		synctest.Wait()
		b.Publish(changed) // finds "slow"'s mailbox full, and replaces the one pending for "merging"
		b.Publish(nil)
		synctest.Wait()

		const head = `
# HELP musterd_bus_coalesced_total Total number of events a coalescing subscriber replaced or merged into a pending event of their key.
# TYPE musterd_bus_coalesced_total counter
musterd_bus_coalesced_total{event="ResourceChanged",subscriber="merging"} 1
musterd_bus_coalesced_total{event="StatusSyncFailed",subscriber="metrics"} 0
musterd_bus_coalesced_total{event="StatusSynced",subscriber="metrics"} 0
musterd_bus_coalesced_total{event="ResourceChanged",subscriber="panicky"} 0
musterd_bus_coalesced_total{event="ResourceChanged",subscriber="slow"} 0
# HELP musterd_bus_delivered_total Total number of events handled per subscriber and event type.
# TYPE musterd_bus_delivered_total counter
musterd_bus_delivered_total{event="ResourceChanged",subscriber="merging"} 0
musterd_bus_delivered_total{event="StatusSyncFailed",subscriber="metrics"} 0
musterd_bus_delivered_total{event="StatusSynced",subscriber="metrics"} 0
musterd_bus_delivered_total{event="ResourceChanged",subscriber="panicky"} 3
musterd_bus_delivered_total{event="ResourceChanged",subscriber="slow"} %d
# HELP musterd_bus_dropped_total Total number of events a lossy subscriber dropped because its mailbox was full.
# TYPE musterd_bus_dropped_total counter
musterd_bus_dropped_total{event="ResourceChanged",subscriber="merging"} 0
musterd_bus_dropped_total{event="StatusSyncFailed",subscriber="metrics"} 0
musterd_bus_dropped_total{event="StatusSynced",subscriber="metrics"} 0
musterd_bus_dropped_total{event="ResourceChanged",subscriber="panicky"} 0
musterd_bus_dropped_total{event="ResourceChanged",subscriber="slow"} 1
# HELP musterd_bus_panics_total Total number of handler panics per subscriber and event type.
# TYPE musterd_bus_panics_total counter
musterd_bus_panics_total{event="ResourceChanged",subscriber="merging"} 0
musterd_bus_panics_total{event="StatusSyncFailed",subscriber="metrics"} 0
musterd_bus_panics_total{event="StatusSynced",subscriber="metrics"} 0
musterd_bus_panics_total{event="ResourceChanged",subscriber="panicky"} 3
musterd_bus_panics_total{event="ResourceChanged",subscriber="slow"} 0
# HELP musterd_bus_pending Number of events waiting in a subscriber's mailbox.
# TYPE musterd_bus_pending gauge
musterd_bus_pending{subscriber="merging"} 1
musterd_bus_pending{subscriber="metrics"} 0
musterd_bus_pending{subscriber="panicky"} 0
musterd_bus_pending{subscriber="slow"} %d
# HELP musterd_bus_published_total Total number of events published per event type.
# TYPE musterd_bus_published_total counter
musterd_bus_published_total{event="ResourceChanged"} 3
musterd_bus_published_total{event="StatusSyncFailed"} 0
musterd_bus_published_total{event="StatusSynced"} 0
# HELP musterd_bus_rejected_total Total number of nil events published.
# TYPE musterd_bus_rejected_total counter
musterd_bus_rejected_total 1
`
		names := []string{"musterd_bus_coalesced_total", "musterd_bus_delivered_total", "musterd_bus_dropped_total",
			"musterd_bus_panics_total", "musterd_bus_pending", "musterd_bus_published_total", "musterd_bus_rejected_total"}
		// The blocked handler is not counted as delivered until it returns.
		assert.NoError(t, testutil.GatherAndCompare(reg, strings.NewReader(fmt.Sprintf(head, 0, 1)), names...))

		release <- struct{}{}
		release <- struct{}{}
		synctest.Wait()
		assert.NoError(t, testutil.GatherAndCompare(reg, strings.NewReader(fmt.Sprintf(head, 2, 0)), names...))
	})
}

func TestWorkqueueMetricsProvider(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		reg := prometheus.NewRegistry()
		provider := statusync.NewWorkqueueMetricsProvider(reg)
		require.NotPanics(t, func() { statusync.NewWorkqueueMetricsProvider(reg) }, "a second provider reuses the vectors")
		newQueue := func(name string, p workqueue.MetricsProvider) workqueue.TypedRateLimitingInterface[string] {
			return workqueue.NewTypedRateLimitingQueueWithConfig(
				workqueue.NewTypedItemExponentialFailureRateLimiter[string](time.Second, time.Minute),
				workqueue.TypedRateLimitingQueueConfig[string]{Name: name, MetricsProvider: p})
		}
		q := newQueue("reconcile", provider)
		other := newQueue("other", statusync.NewWorkqueueMetricsProvider(reg))
		defer other.ShutDown()
		other.Add("x")

		q.Add("a")
		q.Add("b")
		q.Add("a") // already queued: not an add
		time.Sleep(time.Second)
		a, _ := q.Get() // waited 1s
		time.Sleep(250 * time.Millisecond)
		b, _ := q.Get() // waited 1.25s
		time.Sleep(750 * time.Millisecond)
		synctest.Wait() // the queue's 500ms ticker has updated the unfinished-work gauges
		assert.NoError(t, testutil.GatherAndCompare(reg, strings.NewReader(`
# HELP musterd_workqueue_unfinished_work_seconds How many seconds of work has been done that is in progress and hasn't been observed by work_duration. Large values indicate stuck threads. One can deduce the number of stuck threads by observing the rate at which this increases.
# TYPE musterd_workqueue_unfinished_work_seconds gauge
musterd_workqueue_unfinished_work_seconds{name="other"} 0
musterd_workqueue_unfinished_work_seconds{name="reconcile"} 1.75
# HELP musterd_workqueue_longest_running_processor_seconds How many seconds has the longest running processor for the workqueue been running.
# TYPE musterd_workqueue_longest_running_processor_seconds gauge
musterd_workqueue_longest_running_processor_seconds{name="other"} 0
musterd_workqueue_longest_running_processor_seconds{name="reconcile"} 1
`), "musterd_workqueue_unfinished_work_seconds", "musterd_workqueue_longest_running_processor_seconds"))

		q.Done(a)
		q.AddRateLimited(b) // a retry
		q.Done(b)
		time.Sleep(time.Second) // the retry's backoff ends: b is queued again
		synctest.Wait()

		assert.NoError(t, testutil.GatherAndCompare(reg, strings.NewReader(`
# HELP musterd_workqueue_adds_total Total number of adds handled by the workqueue.
# TYPE musterd_workqueue_adds_total counter
musterd_workqueue_adds_total{name="other"} 1
musterd_workqueue_adds_total{name="reconcile"} 3
# HELP musterd_workqueue_depth Current depth of the workqueue.
# TYPE musterd_workqueue_depth gauge
musterd_workqueue_depth{name="other"} 1
musterd_workqueue_depth{name="reconcile"} 1
# HELP musterd_workqueue_retries_total Total number of retries handled by the workqueue.
# TYPE musterd_workqueue_retries_total counter
musterd_workqueue_retries_total{name="other"} 0
musterd_workqueue_retries_total{name="reconcile"} 1
`), "musterd_workqueue_adds_total", "musterd_workqueue_depth", "musterd_workqueue_retries_total"))
		count, sum := histogram(t, reg, "musterd_workqueue_queue_duration_seconds", "reconcile")
		assert.Equal(t, uint64(2), count)
		assert.Equal(t, 2.25, sum)
		count, sum = histogram(t, reg, "musterd_workqueue_work_duration_seconds", "reconcile")
		assert.Equal(t, uint64(2), count)
		assert.Equal(t, 1.75, sum, "a: 1s, b: 0.75s")
		q.ShutDown()
	})
}

func TestNewMetricsRegistersAllOrNothing(t *testing.T) {
	reg := prometheus.NewRegistry()
	taken := prometheus.NewCounter(prometheus.CounterOpts{Name: "musterd_status_sync_failures_total", Help: "taken"})
	reg.MustRegister(taken)
	b := bus.New(bus.Options{})
	defer b.Close()

	for range 2 { // the second time fails at the same metric: the first undid its registrations
		_, err := statusync.NewMetrics(b, statusync.MetricsOptions{Registerer: reg})
		require.ErrorContains(t, err, "metrics: register musterd_status_sync_failures_total")
	}
	families, err := reg.Gather()
	require.NoError(t, err)
	require.Len(t, families, 1, "the metrics registered before the failure are unregistered")

	fresh := prometheus.NewRegistry()
	_, err = statusync.NewMetrics(b, statusync.MetricsOptions{Registerer: fresh})
	require.NoError(t, err)
	_, err = statusync.NewMetrics(b, statusync.MetricsOptions{Registerer: fresh})
	assert.ErrorContains(t, err, "duplicate metrics collector registration attempted")

	_, err = statusync.NewMetrics(b, statusync.MetricsOptions{})
	assert.EqualError(t, err, "metrics: MetricsOptions.Registerer is required")
}
