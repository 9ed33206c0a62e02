package main

import (
	"encoding/json"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/musterd/musterd/pkg/events"
	"github.com/musterd/musterd/pkg/pipeline"
	"github.com/musterd/musterd/pkg/redact"
	"github.com/musterd/musterd/pkg/statusync"
)

// statusView is a resource's reconcile status as the API shows it.
type statusView struct {
	Kind              string     `json:"kind"`
	Namespace         string     `json:"namespace"`
	Name              string     `json:"name"`
	State             string     `json:"state"`
	LastReconcileTime *time.Time `json:"lastReconcileTime,omitempty"`
	LastError         string     `json:"lastError,omitempty"`
	RetryCount        int        `json:"retryCount"`
	NextRetry         *time.Time `json:"nextRetry,omitempty"`
	CorrelationID     string     `json:"correlationId,omitempty"`
}

func viewOf(st statusync.Status) statusView {
	v := statusView{
		Kind: st.Key.Kind, Namespace: st.Key.Namespace, Name: st.Key.Name,
		State: string(st.State), LastError: st.LastError, RetryCount: st.RetryCount, CorrelationID: st.CorrelationID,
	}
	if !st.LastReconcileTime.IsZero() {
		v.LastReconcileTime = &st.LastReconcileTime
	}
	if !st.NextRetry.IsZero() {
		v.NextRetry = &st.NextRetry
	}
	return v
}

type componentView struct {
	Name    string `json:"name"`
	State   string `json:"state"`
	Healthy bool   `json:"healthy"`
	Error   string `json:"error,omitempty"`
}

// newAPI serves the daemon's read-only endpoints. Statuses carry redacted
// errors only; nothing here mutates state.
func newAPI(p *pipeline.Pipeline) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(p.Registry, promhttp.HandlerOpts{}))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		healthy := true
		var views []componentView
		for _, h := range p.Components.Health() {
			v := componentView{Name: h.Name, State: string(h.State), Healthy: h.Healthy}
			if h.Err != nil {
				v.Error = redact.String(h.Err.Error())
			}
			healthy = healthy && h.Healthy
			views = append(views, v)
		}
		code := http.StatusOK
		if !healthy {
			code = http.StatusServiceUnavailable
		}
		writeJSON(w, code, map[string]any{"healthy": healthy, "components": views})
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, _ *http.Request) {
		if !p.Components.Ready() {
			writeJSON(w, http.StatusServiceUnavailable, map[string]any{"ready": false})
			return
		}
		writeJSON(w, http.StatusOK, map[string]any{"ready": true})
	})
	mux.HandleFunc("GET /api/v1/status", func(w http.ResponseWriter, _ *http.Request) {
		views := []statusView{}
		for _, st := range p.Store.List() {
			views = append(views, viewOf(st))
		}
		writeJSON(w, http.StatusOK, map[string]any{"items": views})
	})
	mux.HandleFunc("GET /api/v1/status/{kind}/{namespace}/{name}", func(w http.ResponseWriter, r *http.Request) {
		key := events.NewKey(r.PathValue("kind"), r.PathValue("namespace"), r.PathValue("name"))
		st, ok := p.Store.Get(key)
		if !ok {
			writeJSON(w, http.StatusNotFound, map[string]any{"error": "no status for " + key.String()})
			return
		}
		writeJSON(w, http.StatusOK, viewOf(st))
	})
	return mux
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}
