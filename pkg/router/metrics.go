package router

import (
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/musterd/musterd/pkg/catalogue"
	"github.com/musterd/musterd/pkg/events"
)

// Results of musterd_mcp_tool_calls_total.
const (
	// resultOK: the server answered with a result.
	resultOK = "success"
	// resultToolError: the server answered with a result with isError.
	resultToolError = "tool_error"
	// resultError: no result: the server was not running, died, was
	// stopped, answered with a JSON-RPC error, or the caller cancelled.
	resultError = "error"
)

// metrics are the router's Prometheus metrics. Tool calls are counted per
// real tool: the exposed name the client called and the server that
// served it (a family tool's member), not per meta-tool.
type metrics struct {
	calls    *prometheus.CounterVec
	duration *prometheus.HistogramVec
	// observers caches each (server, tool, result)'s counter and
	// histogram: WithLabelValues hashes and looks up its labels on every
	// call, on the call's path. Keys are callKeys; children are never
	// deleted from the vectors, so a cached one stays theirs.
	observers sync.Map
}

type callKey struct {
	server events.Key
	tool   string
	result string
}

type callObservers struct {
	calls    prometheus.Counter
	duration prometheus.Observer
}

func newMetrics(reg prometheus.Registerer, cat *catalogue.Catalogue, now func() time.Time) (*metrics, error) {
	m := &metrics{
		calls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "musterd", Subsystem: "mcp", Name: "tool_calls_total",
			Help: "Tool calls routed to managed MCP servers, by server, exposed tool name and result (success, tool_error, error).",
		}, []string{"server", "tool", "result"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: "musterd", Subsystem: "mcp", Name: "tool_call_duration_seconds",
			Help:    "Duration of tool calls routed to managed MCP servers, waiting for a starting server included.",
			Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60},
		}, []string{"server", "tool"}),
	}
	age := &catalogueAge{cat: cat, now: now, desc: prometheus.NewDesc("musterd_mcp_catalogue_age_seconds",
		"Seconds since each running MCP server's tools were last listed (at its start or after its tools/list_changed).",
		[]string{"server"}, nil)}
	for _, c := range []prometheus.Collector{m.calls, m.duration, age} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

func (m *metrics) observeCall(server events.Key, tool, result string, took time.Duration) {
	key := callKey{server, tool, result}
	o, ok := m.observers.Load(key)
	if !ok {
		label := serverLabel(server)
		o, _ = m.observers.LoadOrStore(key, &callObservers{
			calls:    m.calls.WithLabelValues(label, tool, result),
			duration: m.duration.WithLabelValues(label, tool),
		})
	}
	obs := o.(*callObservers)
	obs.calls.Inc()
	obs.duration.Observe(took.Seconds())
}

// serverLabel names a server in a metric: its name, with its namespace
// when that is not the default one (Kubernetes mode).
func serverLabel(key events.Key) string {
	key = key.Canonical()
	if key.Namespace == events.DefaultNamespace {
		return key.Name
	}
	return key.Namespace + "/" + key.Name
}

// catalogueAge reports, at each scrape, how long ago each running server's
// tools were listed.
type catalogueAge struct {
	cat  *catalogue.Catalogue
	now  func() time.Time
	desc *prometheus.Desc
}

func (c *catalogueAge) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

func (c *catalogueAge) Collect(ch chan<- prometheus.Metric) {
	now := c.now()
	for _, s := range c.cat.Servers() {
		if s.ListedAt.IsZero() {
			continue
		}
		ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, now.Sub(s.ListedAt).Seconds(), serverLabel(s.Key))
	}
}
