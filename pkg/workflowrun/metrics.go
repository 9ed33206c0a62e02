package workflowrun

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// metrics are the execution metrics: a count by workflow and final
// status, and a duration histogram by workflow.
type metrics struct {
	total    *prometheus.CounterVec
	duration *prometheus.HistogramVec
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		total: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "musterd_workflow_executions_total",
			Help: "Workflow executions finished, by workflow and status (completed, failed).",
		}, []string{"workflow", "status"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "musterd_workflow_execution_duration_seconds",
			Help: "Duration of workflow executions, from the call to the result, by workflow.",
			// Workflows call servers whose timeouts reach minutes.
			Buckets: []float64{.01, .05, .1, .5, 1, 5, 10, 30, 60, 300, 900},
		}, []string{"workflow"}),
	}
	if reg != nil {
		for _, c := range []prometheus.Collector{m.total, m.duration} {
			if err := reg.Register(c); err != nil {
				return nil, err
			}
		}
	}
	return m, nil
}

func (m *metrics) observe(workflow, status string, d time.Duration) {
	m.total.WithLabelValues(workflow, status).Inc()
	m.duration.WithLabelValues(workflow).Observe(d.Seconds())
}
