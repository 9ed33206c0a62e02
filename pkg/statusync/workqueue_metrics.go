package statusync

import (
	"errors"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/util/workqueue"
)

// workqueueMetrics is a workqueue.MetricsProvider over Prometheus vectors
// labelled by queue name, with controller-runtime's names and semantics.
type workqueueMetrics struct {
	depth                   *prometheus.GaugeVec
	adds                    *prometheus.CounterVec
	latency                 *prometheus.HistogramVec
	workDuration            *prometheus.HistogramVec
	unfinishedWork          *prometheus.GaugeVec
	longestRunningProcessor *prometheus.GaugeVec
	retries                 *prometheus.CounterVec
}

// NewWorkqueueMetricsProvider returns a provider of client-go workqueue
// metrics registered with reg: musterd_workqueue_depth, _adds_total,
// _retries_total, _queue_duration_seconds, _work_duration_seconds,
// _unfinished_work_seconds and _longest_running_processor_seconds, each
// labelled by queue name. Queues share a provider by having different names.
// Calling it again with the same reg returns a provider over the same
// registered vectors. It panics if reg holds different metrics under these
// names, as MustRegister does.
func NewWorkqueueMetricsProvider(reg prometheus.Registerer) workqueue.MetricsProvider {
	opts := func(name, help string) prometheus.Opts {
		return prometheus.Opts{Namespace: metricsNamespace, Subsystem: "workqueue", Name: name, Help: help}
	}
	histogram := func(name, help string) *prometheus.HistogramVec {
		o := opts(name, help)
		return prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: o.Namespace, Subsystem: o.Subsystem, Name: o.Name, Help: o.Help,
			Buckets:                         prometheus.ExponentialBuckets(10e-9, 10, 12), // 10ns to 1000s
			NativeHistogramBucketFactor:     1.1,
			NativeHistogramMaxBucketNumber:  100,
			NativeHistogramMinResetDuration: time.Hour,
		}, []string{"name"})
	}
	label := []string{"name"}
	return &workqueueMetrics{
		depth: registerOrReuse(reg, prometheus.NewGaugeVec(prometheus.GaugeOpts(opts("depth",
			"Current depth of the workqueue.")), label)),
		adds: registerOrReuse(reg, prometheus.NewCounterVec(prometheus.CounterOpts(opts("adds_total",
			"Total number of adds handled by the workqueue.")), label)),
		latency: registerOrReuse(reg, histogram("queue_duration_seconds",
			"How long in seconds an item stays in the workqueue before being requested.")),
		workDuration: registerOrReuse(reg, histogram("work_duration_seconds",
			"How long in seconds processing an item from the workqueue takes.")),
		unfinishedWork: registerOrReuse(reg, prometheus.NewGaugeVec(prometheus.GaugeOpts(opts("unfinished_work_seconds",
			"How many seconds of work has been done that is in progress and hasn't been observed by work_duration. "+
				"Large values indicate stuck threads. One can deduce the number of stuck threads by observing "+
				"the rate at which this increases.")), label)),
		longestRunningProcessor: registerOrReuse(reg, prometheus.NewGaugeVec(prometheus.GaugeOpts(opts(
			"longest_running_processor_seconds",
			"How many seconds has the longest running processor for the workqueue been running.")), label)),
		retries: registerOrReuse(reg, prometheus.NewCounterVec(prometheus.CounterOpts(opts("retries_total",
			"Total number of retries handled by the workqueue.")), label)),
	}
}

// registerOrReuse registers c, or returns the equal collector reg has
// already.
func registerOrReuse[C prometheus.Collector](reg prometheus.Registerer, c C) C {
	err := reg.Register(c)
	if err == nil {
		return c
	}
	var already prometheus.AlreadyRegisteredError
	if errors.As(err, &already) {
		if existing, ok := already.ExistingCollector.(C); ok {
			return existing
		}
	}
	panic(fmt.Sprintf("statusync: register workqueue metrics: %v", err))
}

func (m *workqueueMetrics) NewDepthMetric(name string) workqueue.GaugeMetric {
	return m.depth.WithLabelValues(name)
}

func (m *workqueueMetrics) NewAddsMetric(name string) workqueue.CounterMetric {
	return m.adds.WithLabelValues(name)
}

func (m *workqueueMetrics) NewLatencyMetric(name string) workqueue.HistogramMetric {
	return m.latency.WithLabelValues(name)
}

func (m *workqueueMetrics) NewWorkDurationMetric(name string) workqueue.HistogramMetric {
	return m.workDuration.WithLabelValues(name)
}

func (m *workqueueMetrics) NewUnfinishedWorkSecondsMetric(name string) workqueue.SettableGaugeMetric {
	return m.unfinishedWork.WithLabelValues(name)
}

func (m *workqueueMetrics) NewLongestRunningProcessorSecondsMetric(name string) workqueue.SettableGaugeMetric {
	return m.longestRunningProcessor.WithLabelValues(name)
}

func (m *workqueueMetrics) NewRetriesMetric(name string) workqueue.CounterMetric {
	return m.retries.WithLabelValues(name)
}
