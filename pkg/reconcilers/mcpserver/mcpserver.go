package mcpserver

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/musterd/musterd/pkg/apis/muster/v1alpha1"
	"github.com/musterd/musterd/pkg/catalogue"
	"github.com/musterd/musterd/pkg/events"
	"github.com/musterd/musterd/pkg/reconcilers"
	"github.com/musterd/musterd/pkg/resources"
	"github.com/musterd/musterd/pkg/supervisor"
)

// Reasons of the Ready condition besides the states themselves (Running,
// Connected, Failed, …).
const (
	ReasonAutoStartDisabled = "AutoStartDisabled"
	ReasonBackingOff        = "BackingOff"
	ReasonStoppedByOperator = "StoppedByOperator"
)

// Reconciler reconciles MCPServers: desired state from the index, actual
// state from the supervisor.
type Reconciler struct {
	index    *resources.Index
	sup      *supervisor.Supervisor
	names    *catalogue.Catalogue
	observed reconcilers.Observed[v1alpha1.MCPServerStatus]
	// overrides, if set, are the operator's start, stop and restart
	// requests (SetOverrides).
	overrides Overrides
	// exposer applies exposure policies (SetExposer); the catalogue
	// itself when not set.
	exposer Exposer
	// policies are the last good exposure policy of each server, in
	// force while its annotation is wrong.
	policies reconcilers.Observed[*catalogue.Exposure]
}

// Exposer applies a server's exposure policy. The runtime bridge
// (watchers/supervised.Bridge) is one: it also brings back the workflows
// whose tools the policy renames or hides.
type Exposer interface {
	SetExposure(key events.Key, p *catalogue.Exposure)
}

// SetExposer makes the reconciler apply exposure policies through e.
// Call it before the pipeline runs.
func (r *Reconciler) SetExposer(e Exposer) { r.exposer = e }

func (r *Reconciler) setExposure(key events.Key, p *catalogue.Exposure) {
	if r.exposer != nil {
		r.exposer.SetExposure(key, p)
		return
	}
	r.names.SetExposure(key, p)
}

// holdAll is the policy of a server whose policy never parsed: nothing
// of it is exposed, rather than what the policy meant to hide.
var holdAll = func() *catalogue.Exposure {
	all, _ := catalogue.ParseGlob("*")
	none := catalogue.Filter{Exclude: []catalogue.Glob{all}}
	return &catalogue.Exposure{Tools: none, Prompts: none, Resources: none}
}()

// exposure applies the exposure policy of server's annotation and returns
// what is wrong with it, naming the file and field: a policy that does
// not parse, or renames a tool of the running server onto the name of
// another. Then the last good policy stays in force; with none, nothing
// of the server is exposed.
func (r *Reconciler) exposure(key events.Key, server *v1alpha1.MCPServer, entry resources.Entry) error {
	p, err := catalogue.ParseExposure(server.Annotations[catalogue.ExposureAnnotation])
	if err == nil {
		if obs, known := r.sup.Get(key); known && obs.Running() {
			err = p.Check(obs.Tools)
		}
	}
	if err == nil {
		r.setExposure(key, p)
		r.policies.Set(key, p)
		return nil
	}
	last, had := r.policies.Get(key)
	if !had {
		last = holdAll
		r.policies.Set(key, last)
	}
	r.setExposure(key, last)
	where := "metadata.annotations[" + catalogue.ExposureAnnotation + "]"
	if len(entry.Files) > 0 {
		where = entry.Files[0] + ": " + where
	}
	if had && last != holdAll {
		return fmt.Errorf("%s: %w; the last good policy stays in force", where, err)
	}
	return fmt.Errorf("%s: %w; nothing of the server is exposed until it is fixed", where, err)
}

var (
	_ reconcilers.Reconciler     = (*Reconciler)(nil)
	_ reconcilers.StatusReporter = (*Reconciler)(nil)
)

// New returns a reconciler that reads desired state from index, runs
// servers with sup, and names their tools in status as cat exposes them
// (cat itself is kept by the runtime bridge, not by the reconciler).
func New(index *resources.Index, sup *supervisor.Supervisor, cat *catalogue.Catalogue) *Reconciler {
	return &Reconciler{index: index, sup: sup, names: cat}
}

// Override is what an operator asked of one declared server, beside its
// spec.
type Override struct {
	// Stop keeps the server stopped, whatever its autoStart.
	Stop bool
	// Start runs the server though its autoStart is false.
	Start bool
	// Reason says why, for status.
	Reason string
	// Restart, when not empty, names a restart request: the server is
	// stopped and started afresh once for it.
	Restart string
	// Status, for a stop or a start, is what status.override shows, which
	// Kubernetes mode reads back when musterd restarts.
	Status *v1alpha1.MCPServerOverride
}

// Overrides hold the operator's requests. They are consulted on every
// reconcile, so a stop holds across resyncs, runtime events and restarts.
type Overrides interface {
	// Override returns key's override for its definition of hash; a
	// different hash (a changed definition) or "" (not declared) ends it.
	Override(key events.Key, hash string) Override
	// Restarted says the restart request id was carried out.
	Restarted(key events.Key, id string)
}

// SetOverrides makes the reconciler honour o. Call it before the
// pipeline runs.
func (r *Reconciler) SetOverrides(o Overrides) { r.overrides = o }

func (r *Reconciler) override(key events.Key, hash string) Override {
	if r.overrides == nil {
		return Override{}
	}
	return r.overrides.Override(key, hash)
}

// Kind is v1alpha1.KindMCPServer.
func (r *Reconciler) Kind() string { return v1alpha1.KindMCPServer }

// Reconcile makes what runs for req.Key match its definition in force.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcilers.Request) reconcilers.Result {
	key := req.Key
	entry, declared := r.index.Get(key)
	server, _ := entry.Object.(*v1alpha1.MCPServer)
	ov := r.override(key, entry.Hash)
	if server == nil {
		// Not declared, or never with a good definition: nothing may run.
		if err := r.sup.Stop(ctx, key); err != nil {
			return reconcilers.Result{Err: fmt.Errorf("stopping mcp server %s: %w", key, err)}
		}
		r.observed.Delete(key)
		if !declared {
			r.policies.Delete(key)
			r.setExposure(key, nil)
		}
		if declared {
			return reconcilers.Result{Err: reconcilers.Permanent(entry.Err)}
		}
		return reconcilers.Result{Deleted: true}
	}

	spec := server.Spec
	var (
		obs supervisor.Observed
		err error
	)
	if ov.Restart != "" {
		// A fresh start: Stop forgets the server, its failure streak and
		// backoff with it, and a stop is no crash.
		if err := r.sup.Stop(ctx, key); err != nil {
			return reconcilers.Result{Err: fmt.Errorf("restarting mcp server %s: %w", key, err)}
		}
		r.overrides.Restarted(key, ov.Restart)
	}
	// Which clients get a session of their own: beside the spec, so that
	// a change of it restarts nothing.
	sessions, sessionsErr := supervisor.ParseClientSessions(server.Annotations[supervisor.ClientSessionsAnnotation])
	r.sup.SetClientSessions(key, sessions)
	// The protocol version pinned: Ensure restarts the server's session
	// when it changed, as for a changed spec.
	pin, pinErr := supervisor.ParseProtocolVersion(server.Annotations[supervisor.ProtocolVersionAnnotation])
	r.sup.SetProtocolVersion(key, pin)
	// How its tools are exposed: beside the spec too, and applied before
	// a start, so that its first listing is exposed by it.
	exposureErr := r.exposure(key, server, entry)
	if (spec.AutoStart || ov.Start) && !ov.Stop {
		obs, err = r.sup.Ensure(ctx, key, spec)
	} else {
		err = r.sup.Stop(ctx, key)
		obs = supervisor.Observed{State: stoppedState(spec.Type)}
	}
	if errors.Is(err, supervisor.ErrShutdown) || obs.State == "" {
		// musterd is stopping, or Ensure gave up before it observed
		// anything: the status keeps what was last seen.
		return reconcilers.Result{Err: err}
	}
	prev, _ := r.observed.Get(key)
	st := r.status(key, server, obs, err, prev)
	st.Override = ov.Status
	st.Warnings = entry.Warnings
	if sessionsErr != nil {
		st.Warnings = append(slices.Clone(st.Warnings), fmt.Sprintf("metadata.annotations[%s]: %v; %s applies",
			supervisor.ClientSessionsAnnotation, sessionsErr, supervisor.ClientSessionsAuto))
	}
	if pinErr != nil {
		st.Warnings = append(slices.Clone(st.Warnings), fmt.Sprintf("metadata.annotations[%s]: %v; %s applies",
			supervisor.ProtocolVersionAnnotation, pinErr, supervisor.ProtocolNewest))
	}
	if exposureErr != nil {
		st.Warnings = append(slices.Clone(st.Warnings), exposureErr.Error())
	}
	if conflicts := r.names.Conflicts(key); len(conflicts) > 0 {
		st.Warnings = append(slices.Clone(st.Warnings), conflicts...)
	}
	if ov.Stop {
		ready := meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionReady)
		ready.Reason = ReasonStoppedByOperator
		ready.Message = "stopped by an operator until a start, a change of its definition or its deletion"
		if ov.Reason != "" {
			ready.Message += ": " + ov.Reason
		}
	}
	r.observed.Set(key, st)

	at, retryAt := retryTime(obs, err)
	if exposureErr != nil {
		// The server runs on, under the last good policy; the
		// annotation's error is what the reconcile state must show.
		if err == nil && entry.Err == nil {
			return reconcilers.Result{Err: reconcilers.Permanent(exposureErr)}
		}
		err = errors.Join(exposureErr, err)
	}
	if entry.Err != nil {
		// The definition in force is the last good one, which runs; the
		// file's error is what the reconcile state must show.
		if err == nil {
			return reconcilers.Result{Err: reconcilers.Permanent(entry.Err)}
		}
		err = errors.Join(entry.Err, err)
	}
	if retryAt {
		err = reconcilers.RetryAt(err, at)
	}
	return reconcilers.Result{Err: err}
}

// retryTime is when a server that failed may start again: the reconcile
// must come back then, not earlier, since the supervisor refuses any start
// before it.
func retryTime(obs supervisor.Observed, err error) (time.Time, bool) {
	if err == nil {
		return time.Time{}, false
	}
	if later, ok := errors.AsType[*supervisor.RetryLaterError](err); ok {
		return later.Until, true
	}
	if !obs.NextRetryAfter.IsZero() {
		return obs.NextRetryAfter, true // the start failed just now
	}
	return time.Time{}, false
}

// status turns the supervisor's observation into the v1alpha1 status,
// keeping the Ready condition's transition time while its status holds.
func (r *Reconciler) status(key events.Key, server *v1alpha1.MCPServer, obs supervisor.Observed, err error, prev v1alpha1.MCPServerStatus) v1alpha1.MCPServerStatus {
	st := v1alpha1.MCPServerStatus{
		State:               obs.State,
		LastError:           obs.LastError,
		LastFailure:         obs.LastFailure,
		LastFailureTime:     timeOf(obs.LastFailureTime),
		LastConnected:       timeOf(obs.LastConnected),
		RestartCount:        obs.RestartCount,
		ConsecutiveFailures: obs.ConsecutiveFailures,
		LastAttempt:         timeOf(obs.LastAttempt),
		NextRetryAfter:      timeOf(obs.NextRetryAfter),
		ObservedGeneration:  server.Generation,
		Conditions:          append([]metav1.Condition(nil), prev.Conditions...),
	}
	offered := 0 // how many tools the server itself offers
	if obs.Running() {
		naming := catalogue.Naming{ToolPrefix: obs.ToolPrefix}
		if obs.Family != nil {
			naming.Family, naming.InstanceArg = obs.Family.Name, obs.Family.InstanceArg
		}
		offered = len(obs.Tools)
		if names, n, inCatalogue := r.names.Offer(key); inCatalogue {
			st.Tools, offered = names, n
		} else {
			st.Tools = r.names.ExposedNames(key, naming, obs.Tools)
		}
		st.ToolCount = len(st.Tools)
		st.ProtocolVersion = obs.ProtocolVersion()
	}
	ready := metav1.Condition{
		Type:               v1alpha1.ConditionReady,
		Status:             metav1.ConditionFalse,
		ObservedGeneration: server.Generation,
		Reason:             strings.ReplaceAll(string(obs.State), " ", ""),
	}
	switch later, backingOff := errors.AsType[*supervisor.RetryLaterError](err); {
	case obs.Running():
		ready.Status = metav1.ConditionTrue
		ready.Message = "serving " + strconv.Itoa(st.ToolCount) + " tools"
		if st.ToolCount != offered {
			ready.Message = "serving " + strconv.Itoa(st.ToolCount) + " of its " + strconv.Itoa(offered) + " tools"
		}
	case !server.Spec.AutoStart:
		ready.Reason = ReasonAutoStartDisabled
		ready.Message = "autoStart is false: the server is declared but not started"
	case backingOff:
		ready.Reason = ReasonBackingOff
		ready.Message = later.Error()
	case obs.State == v1alpha1.MCPServerStateStarting:
		ready.Message = "starting: the process, initialize and tools/list are under way"
	case obs.State == v1alpha1.MCPServerStateConnecting:
		ready.Message = "connecting: initialize and tools/list are under way"
	case obs.State == v1alpha1.MCPServerStateDisconnected && obs.LastError != "":
		ready.Message = "disconnected, reconnecting on the backoff: " + firstLine(obs.LastError)
	case obs.LastError != "":
		ready.Message = firstLine(obs.LastError)
	case err != nil:
		ready.Message = firstLine(err.Error())
	default:
		ready.Message = "not running"
	}
	meta.SetStatusCondition(&st.Conditions, ready)
	return st
}

// List returns every MCPServer declared, known to the supervisor (running
// or not) or with a recorded status.
func (r *Reconciler) List(context.Context) ([]events.Key, error) {
	keys := r.index.Keys(v1alpha1.KindMCPServer)
	for _, k := range r.sup.Keys() {
		if k.Kind == v1alpha1.KindMCPServer {
			keys = append(keys, k)
		}
	}
	return r.observed.Union(keys), nil
}

// Status returns the status recorded at key's last reconcile, as a
// v1alpha1.MCPServerStatus the caller may keep, with lastConnected as the
// supervisor knows it now: health pings and calls refresh it without a
// reconcile, so that readers can tell a fresh status from a stale one.
func (r *Reconciler) Status(key events.Key) (any, bool) {
	st, ok := r.observed.Get(key)
	if !ok {
		return nil, false
	}
	out := *st.DeepCopy()
	if obs, known := r.sup.Get(key); known && obs.Running() && obs.State == out.State &&
		(out.LastConnected == nil || obs.LastConnected.After(out.LastConnected.Time)) {
		out.LastConnected = timeOf(obs.LastConnected)
	}
	return out, true
}

func stoppedState(t v1alpha1.MCPServerType) v1alpha1.MCPServerState {
	if t.IsRemote() {
		return v1alpha1.MCPServerStateDisconnected
	}
	return v1alpha1.MCPServerStateStopped
}

func timeOf(t time.Time) *metav1.Time {
	if t.IsZero() {
		return nil
	}
	mt := metav1.NewTime(t)
	return &mt
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}
