package api

import (
	"bufio"
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/musterd/musterd/pkg/api/shared"
	"github.com/musterd/musterd/pkg/api/types"
	"github.com/musterd/musterd/pkg/apis/muster/v1alpha1"
	"github.com/musterd/musterd/pkg/bus"
	"github.com/musterd/musterd/pkg/controls"
	"github.com/musterd/musterd/pkg/events"
	"github.com/musterd/musterd/pkg/identity"
	"github.com/musterd/musterd/pkg/lifecycle"
	"github.com/musterd/musterd/pkg/redact"
	"github.com/musterd/musterd/pkg/resources"
	"github.com/musterd/musterd/pkg/statusync"
)

// StatusSource is where the reconcile state of resources is read;
// *statusync.Store is one.
type StatusSource interface {
	Get(key events.Key) (statusync.Status, bool)
}

// Options configures the API.
type Options struct {
	// Index is the desired-state index. Required.
	Index *resources.Index
	// Statuses holds the reconcile state of resources. Required.
	Statuses StatusSource
	// ResourceStatus returns a resource's status in the v1alpha1 schema as
	// its reconciler last observed it (reconcilers.Registry.Status).
	// Optional: without it, objects carry no status.
	ResourceStatus func(events.Key) (any, bool)
	// Process returns the PID of key's running stdio server, or false when
	// none runs (supervisor.Supervisor.Get). Optional: without it, objects
	// name no process.
	Process func(events.Key) (pid int, ok bool)
	// Calls returns an MCPServer's recent tool calls (the router's
	// CallHistory), the API adding their totals. Optional: without it,
	// objects carry no calls.
	Calls func(events.Key) types.Calls
	// Trigger asks for a reconcile of key (coordinator.Trigger). Required.
	Trigger func(events.Key)
	// Leader reports, under leader election, whether this replica leads
	// and, when not, the leader's identity ("" when unknown). A follower
	// reconciles nothing, so a reconcile asked of it is answered 503 at
	// once, naming the leader, rather than accepted and left waiting.
	// Optional: nil means this replica always leads.
	Leader func() (identity string, leading bool)
	// Bus is the bus the event stream shows. Required.
	Bus *bus.Bus
	// Metrics is served on /metrics. Default: prometheus.DefaultGatherer.
	Metrics prometheus.Gatherer
	// Health reports the components' health (lifecycle.Registry.Health).
	// Optional: without it, /healthz reports no components and is healthy.
	Health func() []lifecycle.ComponentHealth
	// Ready reports whether the first full reconcile is done. Required.
	Ready func() bool
	// History holds each resource's latest events (statusync.History).
	// Optional: without it, a resource's recent events are none.
	History interface {
		Recent(events.Key) []events.Event
	}
	// Controls, if set, serve the operators' controls: services, per-kind
	// reconciliation, resync and the overview (package controls).
	Controls *controls.Controller
	// Executions are the workflow executions /api/v1/executions serves.
	// Optional: without it, that path answers 404.
	Executions ExecutionSource
	// Token, when not empty, is the bearer token that mutating requests
	// and the event endpoints (the stream and a resource's recent events)
	// must carry.
	Token string
	// Authenticator, when set, says who a request comes from instead of
	// Token (musterd's OAuth, package oauth/verify); the requests that
	// need Token need it. Default: Token's check.
	Authenticator identity.Authenticator
	// Logger defaults to slog.Default().
	Logger *slog.Logger
}

const (
	// heartbeatInterval is how often an idle event stream gets a comment,
	// which keeps proxies from closing it and lets the server notice a
	// client that went away without closing.
	heartbeatInterval = 15 * time.Second
	// streamBuffer is the bound of a stream's bus subscription.
	streamBuffer = 1024
	// streamWriteTimeout bounds one write to an event stream: a client that
	// stops reading loses its stream instead of holding a subscription
	// forever.
	streamWriteTimeout = time.Minute
)

type server struct {
	opts    Options
	log     *slog.Logger
	auth    identity.Authenticator
	streams atomic.Uint64 // numbers event streams, for unique subscription names
}

// NewHandler returns the API's handler.
func NewHandler(opts Options) (http.Handler, error) {
	var missing []string
	for name, isNil := range map[string]bool{
		"Index": opts.Index == nil, "Statuses": opts.Statuses == nil, "Trigger": opts.Trigger == nil,
		"Bus": opts.Bus == nil, "Ready": opts.Ready == nil,
	} {
		if isNil {
			missing = append(missing, name)
		}
	}
	if len(missing) > 0 {
		slices.Sort(missing)
		return nil, fmt.Errorf("api: options %s are required", strings.Join(missing, ", "))
	}
	s := &server{opts: opts, log: cmp.Or(opts.Logger, slog.Default()).With("component", "api")}
	if s.opts.Metrics == nil {
		s.opts.Metrics = prometheus.DefaultGatherer
	}
	s.auth = opts.Authenticator
	if s.auth == nil {
		s.auth = shared.NewBearer(opts.Token)
	}

	mux := s.probeMux()
	mux.Handle("/api/v1/resources", allow(read, s.list))
	mux.Handle("/api/v1/resources/{kind}/{namespace}/{name}", allow(read, s.get))
	mux.Handle("/api/v1/resources/{kind}/{namespace}/{name}/reconcile", allow([]string{http.MethodPost}, s.reconcile))
	mux.Handle("/api/v1/resources/{kind}/{namespace}/{name}/events", allow(read, s.recent))
	mux.Handle("/api/v1/events", allow(read, s.events))
	if opts.Controls != nil {
		s.controlRoutes(mux)
	}
	mux.Handle("/api/v1/executions", allow(read, s.executions))     // executions.go
	mux.Handle("/api/v1/executions/{id}", allow(read, s.execution)) // executions.go
	return mux, nil
}

// ProbeOptions configures the probe handler.
type ProbeOptions struct {
	// Metrics is served on /metrics. Default: prometheus.DefaultGatherer.
	Metrics prometheus.Gatherer
	// Health reports the components' health (lifecycle.Registry.Health).
	// Optional: without it, /healthz reports no components and is healthy.
	Health func() []lifecycle.ComponentHealth
	// Ready reports whether the first full reconcile is done. Required.
	Ready func() bool
}

// NewProbeHandler returns the handler of the probe listener: /healthz,
// /readyz and /metrics, as the API serves them, and nothing else. It reads
// no resource and needs no token, so it may listen where the kubelet and
// Prometheus reach it while the API stays on loopback (controller-runtime's
// split of its health-probe and metrics servers from webhooks and the like).
func NewProbeHandler(opts ProbeOptions) (http.Handler, error) {
	if opts.Ready == nil {
		return nil, errors.New("api: probe option Ready is required")
	}
	s := &server{opts: Options{Metrics: cmp.Or[prometheus.Gatherer](opts.Metrics, prometheus.DefaultGatherer), Health: opts.Health, Ready: opts.Ready}}
	return s.probeMux(), nil
}

var read = []string{http.MethodGet, http.MethodHead}

// probeMux serves the probes and metrics, and 404 for any other path.
func (s *server) probeMux() *http.ServeMux {
	mux := http.NewServeMux()
	mux.Handle("/healthz", allow(read, s.healthz))
	mux.Handle("/readyz", allow(read, s.readyz))
	mux.Handle("/metrics", allow(read, promhttp.HandlerFor(s.opts.Metrics, promhttp.HandlerOpts{}).ServeHTTP))
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, "no such endpoint: "+r.URL.Path)
	})
	return mux
}

// allow serves only methods; anything else is a 405 naming them.
func allow(methods []string, h http.HandlerFunc) http.Handler {
	allowed := strings.Join(methods, ", ")
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !slices.Contains(methods, r.Method) {
			w.Header().Set("Allow", allowed)
			writeError(w, http.StatusMethodNotAllowed, fmt.Sprintf("method %s not allowed on %s: use %s", r.Method, r.URL.Path, allowed))
			return
		}
		h(w, r)
	})
}

func (s *server) healthz(w http.ResponseWriter, _ *http.Request) {
	h := types.Health{Healthy: true, Components: []types.ComponentHealth{}}
	if s.opts.Health != nil {
		for _, c := range s.opts.Health() {
			v := types.ComponentHealth{Name: c.Name, State: string(c.State), Healthy: c.Healthy}
			if c.Err != nil {
				v.Error = redact.String(c.Err.Error())
			}
			h.Healthy = h.Healthy && c.Healthy
			h.Components = append(h.Components, v)
		}
	}
	writeJSON(w, cond(h.Healthy, http.StatusOK, http.StatusServiceUnavailable), h)
}

func (s *server) readyz(w http.ResponseWriter, _ *http.Request) {
	ready := s.opts.Ready()
	writeJSON(w, cond(ready, http.StatusOK, http.StatusServiceUnavailable), types.Readiness{Ready: ready})
}

func (s *server) list(w http.ResponseWriter, r *http.Request) {
	kind := ""
	if q := r.URL.Query().Get("kind"); q != "" {
		k, err := types.ResolveKind(q)
		if err != nil {
			writeError(w, http.StatusNotFound, err.Error())
			return
		}
		kind = k.Name
	}
	namespace := r.URL.Query().Get("namespace")
	entries := s.opts.Index.List(kind)
	// The index sorts by key string, in which "a-b" sorts before "a/";
	// listings promise the order of the fields.
	slices.SortFunc(entries, func(a, b resources.Entry) int {
		return cmp.Or(cmp.Compare(a.Key.Kind, b.Key.Kind), cmp.Compare(a.Key.Namespace, b.Key.Namespace), cmp.Compare(a.Key.Name, b.Key.Name))
	})
	if namespace != "" {
		entries = slices.DeleteFunc(entries, func(e resources.Entry) bool { return e.Key.Namespace != namespace })
	}
	s.writeList(w, entries)
}

// writeList writes the types.List of entries' objects, byte for byte as
// writeJSON would, but one object at a time: encoded whole, a listing of
// 10,000 resources held about five times its size at once (the objects,
// the encoder's buffer, its indented copy and the body), which set the
// daemon's peak memory while a client polled the listing.
func (s *server) writeList(w http.ResponseWriter, entries []resources.Entry) {
	if len(entries) == 0 {
		writeJSON(w, http.StatusOK, types.List{Items: []types.Object{}})
		return
	}
	var item bytes.Buffer
	enc := json.NewEncoder(&item)
	enc.SetEscapeHTML(false)
	enc.SetIndent("    ", "  ") // an item of "items", two levels in
	body := bufio.NewWriterSize(w, 64<<10)
	for i, e := range entries {
		o, err := s.object(e)
		if err == nil {
			item.Reset()
			err = enc.Encode(o)
		}
		if err != nil && i == 0 {
			s.internalError(w, err)
			return
		}
		if err != nil {
			// The status line is sent: cut the answer short, so that the
			// client sees a failed request, not a shorter listing.
			s.log.Error("API request failed", "error", err)
			panic(http.ErrAbortHandler)
		}
		if i == 0 {
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("Cache-Control", "no-store")
			w.WriteHeader(http.StatusOK)
			_, _ = body.WriteString("{\n  \"items\": [\n    ")
		} else {
			_, _ = body.WriteString(",\n    ")
		}
		_, _ = body.Write(bytes.TrimSuffix(item.Bytes(), []byte("\n")))
	}
	_, _ = body.WriteString("\n  ]\n}\n")
	_ = body.Flush()
}

func (s *server) get(w http.ResponseWriter, r *http.Request) {
	e, ok := s.declared(w, r)
	if !ok {
		return
	}
	o, err := s.object(e)
	if err != nil {
		s.internalError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, o)
}

// recent serves a declared resource's latest events, oldest first, each as
// events.Marshal writes it.
func (s *server) recent(w http.ResponseWriter, r *http.Request) {
	if !s.requireToken(w, r, "to read events") {
		return
	}
	e, ok := s.declared(w, r)
	if !ok {
		return
	}
	key := e.Key
	list := types.EventList{Items: []json.RawMessage{}}
	if s.opts.History != nil {
		for _, e := range s.opts.History.Recent(key) {
			data, err := events.Marshal(e)
			if err != nil {
				s.internalError(w, err)
				return
			}
			list.Items = append(list.Items, data)
		}
	}
	writeJSON(w, http.StatusOK, list)
}

func (s *server) reconcile(w http.ResponseWriter, r *http.Request) {
	if !s.requireToken(w, r, "to trigger a reconcile") {
		return
	}
	e, ok := s.declared(w, r)
	if !ok {
		return
	}
	key := e.Key
	if s.opts.Leader != nil {
		if leader, leading := s.opts.Leader(); !leading {
			msg := "this replica is not the leader and reconciles nothing; "
			if leader != "" {
				msg += "the leader is " + leader + ": ask it"
			} else {
				msg += "no leader is known yet: retry shortly"
			}
			writeError(w, http.StatusServiceUnavailable, msg)
			return
		}
	}
	s.opts.Trigger(key)
	s.log.Info("reconcile triggered through the API", "key", key.String())
	writeJSON(w, http.StatusAccepted, types.ReconcileResponse{Key: key})
}

// requireToken answers 401 and reports false unless r carries the token,
// when one is required; purpose says what the token is needed for.
func (s *server) requireToken(w http.ResponseWriter, r *http.Request, purpose string) bool {
	_, challenge := s.auth.Authenticate(r)
	if challenge == nil {
		return true
	}
	w.Header().Set("WWW-Authenticate", challenge.WWWAuthenticate)
	writeError(w, challenge.Status, "a valid bearer token is required "+purpose) // the challenge says why
	return false
}

// declared returns the index entry of the path's resource, or answers the
// error: a bad path, or a resource not declared (404).
func (s *server) declared(w http.ResponseWriter, r *http.Request) (resources.Entry, bool) {
	kind, key, ok := resourceKey(w, r)
	if !ok {
		return resources.Entry{}, false
	}
	e, found := s.opts.Index.Get(key)
	if !found {
		writeError(w, http.StatusNotFound, kind.Ref(key.Namespace, key.Name)+": not found")
		return resources.Entry{}, false
	}
	return e, true
}

// resourceKey reads the key of the path's resource, or answers the error.
func resourceKey(w http.ResponseWriter, r *http.Request) (types.Kind, events.Key, bool) {
	kind, err := types.ResolveKind(r.PathValue("kind"))
	if err != nil {
		writeError(w, http.StatusNotFound, err.Error())
		return types.Kind{}, events.Key{}, false
	}
	namespace, name := r.PathValue("namespace"), r.PathValue("name")
	for _, check := range []struct {
		field, value string
		valid        func(string) []string
	}{
		{"namespace", namespace, validation.IsDNS1123Label},
		{"name", name, v1alpha1.ValidName},
	} {
		if msgs := check.valid(check.value); len(msgs) > 0 {
			writeError(w, http.StatusBadRequest, fmt.Sprintf("invalid %s %q: %s", check.field, check.value, strings.Join(msgs, "; ")))
			return types.Kind{}, events.Key{}, false
		}
	}
	return kind, events.NewKey(kind.Name, namespace, name), true
}

func (s *server) internalError(w http.ResponseWriter, err error) {
	s.log.Error("API request failed", "error", err)
	writeError(w, http.StatusInternalServerError, redact.String(err.Error()))
}

// writeJSON writes v indented. HTML characters are not escaped: this is
// JSON for programs and terminals, and URLs keep their & readable.
func writeJSON(w http.ResponseWriter, code int, v any) {
	var body bytes.Buffer
	enc := json.NewEncoder(&body)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		code = http.StatusInternalServerError
		body.Reset()
		_ = json.NewEncoder(&body).Encode(types.ErrorResponse{Error: "encode the answer: " + err.Error()})
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	_, _ = w.Write(body.Bytes())
}

func writeError(w http.ResponseWriter, code int, msg string) {
	writeJSON(w, code, types.ErrorResponse{Error: msg})
}

func cond[T any](c bool, yes, no T) T {
	if c {
		return yes
	}
	return no
}
