package api_test

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/musterd/musterd/pkg/api"
	"github.com/musterd/musterd/pkg/lifecycle"
)

// The probe handler serves /healthz, /readyz and /metrics as the API does,
// and nothing else: every API path, the event stream included, is a 404,
// and nothing needs (or accepts) a token.
func TestTheProbeHandlerServesOnlyHealthReadinessAndMetrics(t *testing.T) {
	_, err := api.NewProbeHandler(api.ProbeOptions{})
	require.EqualError(t, err, "api: probe option Ready is required")

	metrics := prometheus.NewRegistry()
	c := prometheus.NewCounter(prometheus.CounterOpts{Name: "musterd_probe_test_total", Help: "A test counter."})
	metrics.MustRegister(c)
	c.Add(2)
	ready := false
	h, err := api.NewProbeHandler(api.ProbeOptions{
		Metrics: metrics,
		Ready:   func() bool { return ready },
		Health: func() []lifecycle.ComponentHealth {
			return []lifecycle.ComponentHealth{{Name: "watcher", State: lifecycle.StateFailed, Err: errors.New("token=hunter2")}}
		},
	})
	require.NoError(t, err)
	serve := func(method, path string) (int, string) {
		t.Helper()
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(method, path, nil))
		body, err := io.ReadAll(rec.Result().Body)
		require.NoError(t, err)
		return rec.Code, string(body)
	}

	code, body := serve(http.MethodGet, "/healthz")
	assert.Equal(t, http.StatusServiceUnavailable, code)
	assert.JSONEq(t, `{"healthy":false,"components":[{"name":"watcher","state":"failed","healthy":false,"error":"token=[redacted]"}]}`, body)
	code, body = serve(http.MethodGet, "/readyz")
	assert.Equal(t, http.StatusServiceUnavailable, code)
	assert.JSONEq(t, `{"ready":false}`, body)
	ready = true
	code, _ = serve(http.MethodGet, "/readyz")
	assert.Equal(t, http.StatusOK, code)
	code, body = serve(http.MethodGet, "/metrics")
	assert.Equal(t, http.StatusOK, code)
	assert.Contains(t, body, "musterd_probe_test_total 2\n")
	code, _ = serve(http.MethodPost, "/metrics")
	assert.Equal(t, http.StatusMethodNotAllowed, code)

	for _, path := range []string{
		"/", "/api/v1/resources", "/api/v1/resources/mcpservers/default/git",
		"/api/v1/resources/mcpservers/default/git/events", "/api/v1/events", "/api/v1/events?format=trace",
		"/debug/pprof/",
	} {
		code, body := serve(http.MethodGet, path)
		assert.Equal(t, http.StatusNotFound, code, path)
		assert.Contains(t, body, `"error": "no such endpoint: `, path)
	}
	code, _ = serve(http.MethodPost, "/api/v1/resources/mcpservers/default/git/reconcile")
	assert.Equal(t, http.StatusNotFound, code)
}
