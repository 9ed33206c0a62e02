package controls

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/musterd/musterd/pkg/apis/muster/v1alpha1"
	"github.com/musterd/musterd/pkg/bus"
	"github.com/musterd/musterd/pkg/events"
	"github.com/musterd/musterd/pkg/redact"
	"github.com/musterd/musterd/pkg/resources"
	"github.com/musterd/musterd/pkg/services"
	"github.com/musterd/musterd/pkg/statusync"
)

// Coordinator is the part of *coordinator.Coordinator controls uses.
type Coordinator interface {
	KindEnabled(kind string) bool
	SetKindEnabled(kind string, enabled bool) error
}

// Options configures a Controller.
type Options struct {
	// Bus carries the requests and their reconciles. Required.
	Bus *bus.Bus
	// Index is the desired state: only what it declares is controlled.
	// Required.
	Index *resources.Index
	// Overrides hold the service requests. Required.
	Overrides *services.Overrides
	// Coordinator enables and disables kinds. Required.
	Coordinator Coordinator
	// Kinds are the kinds with a reconciler, in the order overviews list
	// them. Required.
	Kinds []string
	// List returns a kind's keys as its reconciler lists them, desired and
	// running alike (reconcilers.Reconciler.List). Required.
	List func(ctx context.Context, kind string) ([]events.Key, error)
	// Statuses is the status store. Required. It is told when a kind is
	// enabled or disabled, so that statuses say so.
	Statuses interface {
		Get(events.Key) (statusync.Status, bool)
		List() []statusync.Status
		SetKindDisabled(kind string, disabled bool)
	}
	// ServerStatus returns an MCP server's status as its reconciler last
	// observed it. Required.
	ServerStatus func(events.Key) (v1alpha1.MCPServerStatus, bool)
	// Mode is "filesystem" or "kubernetes". Default "filesystem".
	Mode string
	// Leader reports whether this replica leads, and the leader's identity
	// when it does not. Nil: it always leads.
	Leader func() (identity string, leading bool)
	// QueueDepth returns how many keys wait in the coordinator's queue.
	// Optional.
	QueueDepth func() int
	// ToolCount returns how many tools the catalogue exposes. Optional.
	ToolCount func() int
	// ServerTools returns how many tools a running server offers and how
	// many of them are exposed (its exposure policy and conflicts
	// applied); ok is false for one that does not run. Optional.
	ServerTools func(events.Key) (ToolCounts, bool)
	// WaitTimeout bounds how long a service request waits for the
	// reconcile it caused. Default 60s.
	WaitTimeout time.Duration
	// Logger defaults to slog.Default().
	Logger *slog.Logger
}

// Controller carries out operators' requests. Its methods are safe for
// concurrent use.
type Controller struct {
	opts Options
	log  *slog.Logger

	mu         sync.Mutex
	lastResync time.Time
}

// New returns a Controller.
func New(opts Options) (*Controller, error) {
	var missing []string
	for name, isNil := range map[string]bool{
		"Bus": opts.Bus == nil, "Index": opts.Index == nil, "Overrides": opts.Overrides == nil,
		"Coordinator": opts.Coordinator == nil, "Kinds": len(opts.Kinds) == 0, "List": opts.List == nil,
		"Statuses": opts.Statuses == nil, "ServerStatus": opts.ServerStatus == nil,
	} {
		if isNil {
			missing = append(missing, name)
		}
	}
	if len(missing) > 0 {
		slices.Sort(missing)
		return nil, fmt.Errorf("controls: options %v are required", missing)
	}
	opts.Mode = cmp.Or(opts.Mode, "filesystem")
	opts.WaitTimeout = cmp.Or(opts.WaitTimeout, 60*time.Second)
	return &Controller{opts: opts, log: cmp.Or(opts.Logger, slog.Default()).With("component", "controls")}, nil
}

// ErrNotFound is matched (errors.Is) by the error of a request for a
// service or kind that does not exist.
var ErrNotFound = errors.New("not found")

// ErrRefused is matched by the error of a request the state refuses,
// such as a restart of a server an operator stopped.
var ErrRefused = errors.New("refused")

// ErrNotLeader is matched by the error of a request to a follower, which
// reconciles nothing.
var ErrNotLeader = errors.New("not the leader")

// ServiceResult is the answer to a service request.
type ServiceResult struct {
	Key    events.Key `json:"key"`
	Action string     `json:"action"`
	// CorrelationID is the request's, which its reconcile carries.
	CorrelationID string `json:"correlationId"`
	// Reconciled says the request's reconcile finished within the wait;
	// when false, the request is recorded and will be carried out.
	Reconciled bool `json:"reconciled"`
	// State is the server's state after it (Running, Stopped, Failed, …),
	// or before it when Reconciled is false.
	State string `json:"state,omitempty"`
	// Error is the reconcile's error, redacted, when it failed.
	Error string `json:"error,omitempty"`
	// ConsecutiveFailures is the server's failure streak as the answer is
	// made: a restart starts a new one.
	ConsecutiveFailures int `json:"consecutiveFailures,omitempty"`
	// Unchanged says the server was in the asked state already: nothing
	// was recorded or reconciled.
	Unchanged bool `json:"unchanged,omitempty"`
}

// Failed reports whether the request's reconcile failed.
func (r ServiceResult) Failed() bool { return r.Error != "" }

// Start ends a stop of the MCP server key and, when its autoStart is
// false, runs it all the same, until a stop, a change or its deletion. A
// server that is not running starts afresh, whatever its backoff.
func (c *Controller) Start(ctx context.Context, key events.Key, reason string) (ServiceResult, error) {
	return c.service(ctx, key, ActionStart, reason)
}

// Stop keeps the MCP server key stopped until a start, a change of its
// definition or its deletion.
func (c *Controller) Stop(ctx context.Context, key events.Key, reason string) (ServiceResult, error) {
	return c.service(ctx, key, ActionStop, reason)
}

// Restart starts the MCP server key afresh: not a crash, its backoff
// reset. A stopped server stays stopped: start it instead.
func (c *Controller) Restart(ctx context.Context, key events.Key, reason string) (ServiceResult, error) {
	return c.service(ctx, key, ActionRestart, reason)
}

func (c *Controller) service(ctx context.Context, key events.Key, action, reason string) (ServiceResult, error) {
	key = events.NewKey(v1alpha1.KindMCPServer, key.Namespace, key.Name)
	res := ServiceResult{Key: key, Action: action}
	if err := c.leading(); err != nil {
		return res, err
	}
	entry, ok := c.opts.Index.Get(key)
	if !ok || entry.Object == nil {
		return res, fmt.Errorf("service %s: %w", key.Name, ErrNotFound)
	}
	if !c.opts.Coordinator.KindEnabled(key.Kind) {
		return res, fmt.Errorf("reconciliation of %s is disabled, so the request would not be carried out: enable it first: %w", key.Kind, ErrRefused)
	}
	server := entry.Object.(*v1alpha1.MCPServer)
	reason = redact.String(reason)
	corr := events.NewCorrelationID()
	res.CorrelationID = corr
	rec, hasRec := c.opts.Overrides.Get(key)
	status, _ := c.opts.ServerStatus(key)
	running := status.State == v1alpha1.MCPServerStateRunning || status.State == v1alpha1.MCPServerStateConnected
	stopped := hasRec && rec.State == services.StateStopped && rec.Hash == entry.Hash
	switch action {
	case ActionStop:
		if stopped {
			res.Unchanged, res.Reconciled, res.State = true, true, string(status.State)
			return res, nil
		}
		if err := c.opts.Overrides.Set(services.Record{Key: key, State: services.StateStopped, Reason: reason, Hash: entry.Hash, Since: events.Now(), CorrelationID: corr}); err != nil {
			return res, err
		}
	case ActionStart:
		if running && !stopped {
			res.Unchanged, res.Reconciled, res.State = true, true, string(status.State)
			return res, nil
		}
		if server.Spec.AutoStart {
			if err := c.opts.Overrides.Clear(key); err != nil {
				return res, err
			}
		} else if err := c.opts.Overrides.Set(services.Record{Key: key, State: services.StateStarted, Reason: reason, Hash: entry.Hash, Since: events.Now(), CorrelationID: corr}); err != nil {
			return res, err
		}
		// An operator's start is a fresh start: a server that failed is
		// not held back by its backoff.
		c.opts.Overrides.Restart(key, corr)
	case ActionRestart:
		if stopped {
			return res, fmt.Errorf("service %s is stopped by an operator: start it rather than restart it: %w", key.Name, ErrRefused)
		}
		c.opts.Overrides.Restart(key, corr)
	}
	c.log.Info("service request", "key", key.String(), "action", action, "correlationId", corr)
	outcome := c.awaitOutcome(key, corr, false)
	defer outcome.stop()
	// A start runs on the supervisor's own goroutines: the request's
	// reconcile asks for it and records Starting, and the start's outcome
	// is the reconcile that follows it, under a correlation of its own.
	later := c.awaitOutcome(key, corr, true)
	defer later.stop()
	c.opts.Bus.Publish(ServiceRequested{Meta: events.NewMeta(corr), Key: key, Action: action, Reason: reason})
	c.trigger(corr, events.ReasonManual, key)
	deadline := time.After(c.opts.WaitTimeout)
	select {
	case o := <-outcome.ch:
		res.Reconciled = true
		res.Error = o
	case <-ctx.Done():
	case <-deadline:
	}
	for waiting := res.Reconciled && res.Error == "" && c.starting(key); waiting; waiting = c.starting(key) {
		select {
		case o := <-later.ch:
			res.Error = o
		case <-ctx.Done():
			waiting = false
		case <-deadline:
			waiting = false
		}
		if !waiting || res.Error != "" {
			break
		}
	}
	if st, ok := c.opts.ServerStatus(key); ok {
		res.State, res.ConsecutiveFailures = string(st.State), st.ConsecutiveFailures
	}
	return res, nil
}

// starting reports whether key's server is starting or connecting.
func (c *Controller) starting(key events.Key) bool {
	st, _ := c.opts.ServerStatus(key)
	return st.State == v1alpha1.MCPServerStateStarting || st.State == v1alpha1.MCPServerStateConnecting
}

// outcome delivers the error ("" for none) of the first reconcile outcome
// of one key and correlation ID; with anyCorrelation, of every reconcile
// of the key, as they come (up to 64 unread).
type outcome struct {
	ch   chan string
	stop func()
}

func (c *Controller) awaitOutcome(key events.Key, corr string, anyCorrelation bool) outcome {
	ch := make(chan string, 1)
	name := "controls-" + corr
	if anyCorrelation {
		ch, name = make(chan string, 64), name+"-later"
	}
	deliver := func(msg string) {
		select {
		case ch <- msg:
		default:
		}
	}
	sub, err := c.opts.Bus.Subscribe(bus.SubscriberOptions{
		Name:     name,
		Delivery: bus.Lossy(64),
		Handlers: []bus.Handler{
			bus.On(func(e events.ResourceSynced) {
				if e.Key.Canonical() == key && (anyCorrelation || e.CorrelationID == corr) {
					deliver("")
				}
			}),
			bus.On(func(e events.ResourceFailed) {
				if e.Key.Canonical() == key && (anyCorrelation || e.CorrelationID == corr) {
					deliver(redact.String(e.Error))
				}
			}),
		},
	})
	if err != nil { // the bus is closed: nothing will come
		return outcome{ch: ch, stop: func() {}}
	}
	return outcome{ch: ch, stop: sub.Unsubscribe}
}

// trigger asks the coordinator to reconcile keys, under corr.
func (c *Controller) trigger(corr string, reason events.Reason, keys ...events.Key) {
	tks := make([]events.TriggeredKey, len(keys))
	for i, k := range keys {
		tks[i] = events.TriggeredKey{Key: k.Canonical(), CorrelationID: corr}
	}
	c.opts.Bus.Publish(events.ReconciliationTriggered{Meta: events.NewMeta(corr), Keys: events.NewTriggeredKeys(tks...), Reason: reason})
}

func (c *Controller) leading() error {
	if c.opts.Leader == nil {
		return nil
	}
	if leader, leading := c.opts.Leader(); !leading {
		if leader != "" {
			return fmt.Errorf("%w: this replica reconciles nothing; the leader is %s: ask it", ErrNotLeader, leader)
		}
		return fmt.Errorf("%w: this replica reconciles nothing, and no leader is known yet: retry shortly", ErrNotLeader)
	}
	return nil
}

// kind resolves a kind's name as the reconcilers know it.
func (c *Controller) kind(kind string) (string, error) {
	for _, k := range c.opts.Kinds {
		if k == kind {
			return k, nil
		}
	}
	return "", fmt.Errorf("kind %q: %w; the kinds are %v", kind, ErrNotFound, c.opts.Kinds)
}

// SetKindEnabled enables or disables the reconciliation of kind. A
// disabled kind's changes are still watched and indexed; enabling it
// reconciles each of its keys once, at once. The switch is this
// replica's, in memory: -disable-kinds (config.yaml disabledKinds) sets
// the set a start begins with.
func (c *Controller) SetKindEnabled(kind string, enabled bool) error {
	kind, err := c.kind(kind)
	if err != nil {
		return err
	}
	// A follower reconciles nothing: its switch would change nothing now,
	// and mislead after a failover.
	if err := c.leading(); err != nil {
		return err
	}
	was := c.opts.Coordinator.KindEnabled(kind)
	err = c.opts.Coordinator.SetKindEnabled(kind, enabled)
	c.opts.Statuses.SetKindDisabled(kind, !c.opts.Coordinator.KindEnabled(kind))
	if was != enabled {
		c.log.Info("reconciliation toggled", "kind", kind, "enabled", enabled)
		c.opts.Bus.Publish(ReconciliationToggled{Meta: events.NewMeta(""), Kind: kind, Enabled: enabled})
	}
	return err
}

// KindEnabled reports whether kind is reconciled.
func (c *Controller) KindEnabled(kind string) bool { return c.opts.Coordinator.KindEnabled(kind) }

// ResyncResult is the answer to a resync.
type ResyncResult struct {
	Kinds         []string `json:"kinds"`
	Keys          int      `json:"keys"`
	CorrelationID string   `json:"correlationId"`
	// Skipped are the kinds not resynced because they are disabled.
	Skipped []string `json:"skipped,omitempty"`
}

// Resync reconciles every key of kind, or of every enabled kind when kind
// is "": what is declared and what runs without being declared alike, so
// orphans are pruned.
func (c *Controller) Resync(ctx context.Context, kind string) (ResyncResult, error) {
	if err := c.leading(); err != nil {
		return ResyncResult{}, err
	}
	kinds := c.opts.Kinds
	if kind != "" {
		k, err := c.kind(kind)
		if err != nil {
			return ResyncResult{}, err
		}
		kinds = []string{k}
	}
	res := ResyncResult{CorrelationID: events.NewCorrelationID(), Kinds: []string{}}
	var keys []events.Key
	for _, k := range kinds {
		if !c.opts.Coordinator.KindEnabled(k) {
			res.Skipped = append(res.Skipped, k)
			continue
		}
		listed, err := c.opts.List(ctx, k)
		if err != nil {
			return ResyncResult{}, fmt.Errorf("resync: list %s: %w", k, err)
		}
		keys = append(keys, listed...)
		res.Kinds = append(res.Kinds, k)
	}
	res.Keys = len(keys)
	c.opts.Bus.Publish(ResyncRequested{Meta: events.NewMeta(res.CorrelationID), Kind: kind, Keys: len(keys)})
	if len(keys) > 0 {
		c.trigger(res.CorrelationID, events.ReasonResync, keys...)
	}
	c.mu.Lock()
	c.lastResync = events.Now()
	c.mu.Unlock()
	c.log.Info("resync requested", "kind", kind, "keys", len(keys), "correlationId", res.CorrelationID)
	return res, nil
}
