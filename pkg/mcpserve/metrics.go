package mcpserve

import (
	"context"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/prometheus/client_golang/prometheus"
)

// metrics are the endpoint's own: sessions and list_changed notifications.
// Per-tool call counts and catalogue age are the router's.
type metrics struct {
	listChanged *prometheus.CounterVec
	rejected    *prometheus.CounterVec
}

func newMetrics(reg prometheus.Registerer, views map[string]*mcp.Server) *metrics {
	m := &metrics{
		listChanged: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "musterd_mcp_list_changed_notifications_total",
			Help: "notifications/{tools,resources,prompts}/list_changed sent to MCP sessions, by view and list.",
		}, []string{"view", "list"}),
		rejected: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "musterd_mcp_requests_rejected_total",
			Help: "MCP requests answered with a JSON-RPC error before reaching a session, by reason.",
		}, []string{"reason"}),
	}
	if reg == nil {
		return m
	}
	collectors := []prometheus.Collector{m.listChanged, m.rejected}
	for view, srv := range views {
		collectors = append(collectors, prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name:        "musterd_mcp_sessions",
			Help:        "Active MCP sessions, by view.",
			ConstLabels: prometheus.Labels{"view": view},
		}, func() float64 {
			n := 0
			for range srv.Sessions() {
				n++
			}
			return float64(n)
		}))
	}
	for _, c := range collectors {
		reg.MustRegister(c)
	}
	return m
}

// countListChanged counts the list_changed notifications a view sends, one
// per session.
func (m *metrics) countListChanged(view string) mcp.Middleware {
	return func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if strings.HasPrefix(method, "notifications/") && strings.HasSuffix(method, "/list_changed") {
				list := strings.TrimSuffix(strings.TrimPrefix(method, "notifications/"), "/list_changed")
				m.listChanged.WithLabelValues(view, list).Inc()
			}
			return next(ctx, method, req)
		}
	}
}
