package supervised

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/musterd/musterd/pkg/apis/muster/v1alpha1"
	"github.com/musterd/musterd/pkg/bus"
	"github.com/musterd/musterd/pkg/catalogue"
	"github.com/musterd/musterd/pkg/events"
	"github.com/musterd/musterd/pkg/reconcilers/workflow"
	"github.com/musterd/musterd/pkg/redact"
	"github.com/musterd/musterd/pkg/resources"
	"github.com/musterd/musterd/pkg/supervisor"
)

// Name is the bridge's component name.
const Name = "runtime-bridge"

// Options configure a Bridge.
type Options struct {
	// Index is where the bridge finds the Workflows that name a changed
	// tool. Required.
	Index *resources.Index
	// Catalogue is kept in step with the servers that run. Required.
	Catalogue *catalogue.Catalogue
	// Logger receives a debug line per change applied. Default
	// slog.Default().
	Logger *slog.Logger
}

// Bridge applies the supervisor's changes to the catalogue and the bus.
// Make one with New, pass its OnChange as supervisor.Options.OnChangeSync
// and run it with Start.
type Bridge struct {
	bus   *bus.Bus
	index *resources.Index
	cat   *catalogue.Catalogue
	log   *slog.Logger

	mu      sync.Mutex
	queue   []change
	stopped bool          // Start has returned: changes are dropped
	wake    chan struct{} // capacity 1: the queue has work

	// conflicts are the servers whose conflicts the catalogue reported
	// changed (catalogue.Change.Conflicts), to be reconciled so that
	// their status says so; under conflictsMu alone, since the
	// catalogue reports them while br.mu may be held.
	conflictsMu sync.Mutex
	conflicts   []events.Key

	// named is each server's naming (toolPrefix, family) as last
	// observed, under mu: the names of its users' own connections' tools.
	named map[events.Key]catalogue.Naming

	started atomic.Bool
	// last is the last observation applied per server, for telling
	// transitions apart; only Start's goroutine touches it.
	last map[events.Key]supervisor.Observed
}

type change struct {
	key      events.Key
	obs      supervisor.Observed
	tools    []string // the exposed names whose answer the change altered
	starting string   // the name prefix of a server that began or ended starting
	exposure bool     // a change of the exposure policy: the server's state is as it was
}

// New returns a bridge publishing on b.
func New(b *bus.Bus, opts Options) (*Bridge, error) {
	switch {
	case b == nil:
		return nil, errors.New("runtime-bridge: nil bus")
	case opts.Index == nil:
		return nil, errors.New("runtime-bridge: Options.Index is required")
	case opts.Catalogue == nil:
		return nil, errors.New("runtime-bridge: Options.Catalogue is required")
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	br := &Bridge{
		bus:   b,
		index: opts.Index,
		cat:   opts.Catalogue,
		log:   opts.Logger.With("component", Name),
		wake:  make(chan struct{}, 1),
		last:  map[events.Key]supervisor.Observed{},
	}
	// The subscription lives as long as the catalogue: a bridge is made
	// once per daemon.
	opts.Catalogue.Subscribe(func(c catalogue.Change) {
		if len(c.Conflicts) == 0 {
			return
		}
		br.conflictsMu.Lock()
		br.conflicts = append(br.conflicts, c.Conflicts...)
		br.conflictsMu.Unlock()
		br.kick()
	})
	return br, nil
}

func (br *Bridge) kick() {
	select {
	case br.wake <- struct{}{}:
	default: // a wakeup is pending already
	}
}

// SetExposure applies key's exposure policy to the catalogue at once
// (catalogue.SetExposure: nothing is listed again, nothing restarts), and
// queues for Start's goroutine the Workflows naming a tool whose answer
// changed, so that they are judged again by the names now exposed, and
// the servers whose conflicts changed. The MCPServer reconciler calls it;
// it never blocks on the bus.
func (br *Bridge) SetExposure(key events.Key, p *catalogue.Exposure) {
	key = key.Canonical()
	br.mu.Lock()
	defer br.mu.Unlock()
	tools := br.cat.SetExposure(key, p)
	if br.stopped || len(tools) == 0 {
		return
	}
	br.queue = append(br.queue, change{key: key, tools: tools, exposure: true})
	br.kick()
}

// Name returns "runtime-bridge".
func (br *Bridge) Name() string { return Name }

// OnChange applies a change of a server's observed state to the catalogue
// at once, and queues what must be published for Start's goroutine. Its
// signature is supervisor.Options.OnChangeSync's: called there, under the
// supervisor's lock, the catalogue never lags behind what Ensure returns,
// so a server reported Running has its tools in the catalogue already. It
// never blocks on the bus. Changes queued before Start are published when
// it starts; those after it returned are not published, as musterd is
// stopping, but still kept in the catalogue.
func (br *Bridge) OnChange(key events.Key, obs supervisor.Observed) {
	key = key.Canonical()
	br.mu.Lock()
	defer br.mu.Unlock()
	if br.named == nil {
		br.named = map[events.Key]catalogue.Naming{}
	}
	br.named[key] = naming(obs)
	var tools []string
	switch {
	case obs.Running():
		tools = br.cat.Update(key, naming(obs), obs.ToolDefs, obs.ListedAt)
	case restarting(obs):
		// A spec-change restart under way: the tools stay offered, and a
		// call made meanwhile waits for the new instance in the
		// supervisor instead of failing as an unknown tool; the new
		// instance's listing replaces them, its failure removes them.
	default:
		tools = br.cat.Remove(key)
	}
	// A server starting for the first time, or again after it went down,
	// is what workflows naming its tools wait for; one being replaced
	// keeps its tools offered meanwhile, and nobody waits.
	starting := br.cat.SetStarting(key, naming(obs), obs.State.Transient() && !restarting(obs))
	if br.stopped {
		return
	}
	br.queue = append(br.queue, change{key: key, obs: obs, tools: tools, starting: starting})
	br.kick()
}

// Start applies queued changes until ctx is done.
func (br *Bridge) Start(ctx context.Context) error {
	if !br.started.CompareAndSwap(false, true) {
		return errors.New("runtime-bridge: already started")
	}
	defer func() {
		br.mu.Lock()
		br.stopped, br.queue = true, nil
		br.mu.Unlock()
	}()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-br.wake:
		}
		br.mu.Lock()
		batch := br.queue
		br.queue = nil
		br.mu.Unlock()
		for _, c := range batch {
			br.apply(c)
		}
		br.conflictsMu.Lock()
		conflicts := br.conflicts
		br.conflicts = nil
		br.conflictsMu.Unlock()
		br.reconcileConflicts(conflicts)
	}
}

// reconcileConflicts publishes each server whose conflicts changed, once,
// as a ResourceChanged, so that its reconcile puts them in its status.
func (br *Bridge) reconcileConflicts(keys []events.Key) {
	if len(keys) == 0 {
		return
	}
	slices.SortFunc(keys, events.CompareKeys)
	keys = slices.Compact(keys)
	corr := events.NewCorrelationID()
	for _, k := range keys {
		bus.Publish(br.bus, events.ResourceChanged{
			Meta:      events.NewMeta(corr),
			Key:       k,
			Operation: events.OperationUpdate,
			Source:    events.SourceServiceState,
		})
	}
	br.log.Debug("servers whose tool conflicts changed", "servers", len(keys), "correlationId", corr)
}

// apply publishes what one change, already in the catalogue, needs
// reconciled.
func (br *Bridge) apply(c change) {
	key, obs, tools := c.key, c.obs, c.tools
	if c.exposure {
		corr := events.NewCorrelationID()
		workflows := br.naming(tools, "")
		for _, wf := range workflows {
			bus.Publish(br.bus, events.ResourceChanged{
				Meta:      events.NewMeta(corr),
				Key:       wf,
				Operation: events.OperationUpdate,
				Source:    events.SourceServiceState,
			})
		}
		br.log.Debug("exposure policy applied", "key", key.String(), "toolsChanged", tools, "workflows", len(workflows), "correlationId", corr)
		return
	}
	prev := br.last[key]
	if obs.Running() || failed(obs) || authRequired(obs) || obs.State.Transient() {
		br.last[key] = obs
	} else {
		delete(br.last, key) // stopped: a later start begins afresh
	}

	corr := events.NewCorrelationID()
	if needsReconcile(prev, obs) {
		bus.Publish(br.bus, events.ServiceStateChanged{
			Meta:          events.NewMeta(corr),
			Key:           key,
			State:         string(obs.State),
			PreviousState: string(prev.State),
			Error:         redact.String(supervisor.Summary(obs.LastError)),
		})
	}
	workflows := br.naming(tools, c.starting)
	for _, wf := range workflows {
		bus.Publish(br.bus, events.ResourceChanged{
			Meta:      events.NewMeta(corr),
			Key:       wf,
			Operation: events.OperationUpdate,
			Source:    events.SourceServiceState,
		})
	}
	br.log.Debug("runtime change applied", "key", key.String(), "state", obs.State, "previousState", prev.State,
		"toolsChanged", tools, "workflows", len(workflows), "correlationId", corr)
}

// needsReconcile says whether the change from prev to obs is one the
// MCPServer's status must show and no reconcile has seen: the outcome of a
// start (which the reconcile that asked for it did not wait for; Auth
// Required is one), a server
// that went down by itself, or one that runs on with other tools or a
// cleared failure streak. A stop, or the transient Starting and Connecting
// that the reconcile recorded itself, are not.
func needsReconcile(prev, obs supervisor.Observed) bool {
	switch {
	case obs.Running():
		return !prev.Running() || !slices.Equal(prev.Tools, obs.Tools) ||
			prev.ConsecutiveFailures != obs.ConsecutiveFailures || prev.LastError != obs.LastError
	case failed(obs):
		return !failed(prev) || prev.State != obs.State || !prev.NextRetryAfter.Equal(obs.NextRetryAfter) ||
			prev.LastError != obs.LastError
	case authRequired(obs):
		return prev.State != obs.State || prev.LastError != obs.LastError
	}
	return false
}

// authRequired reports whether obs is the outcome of a start whose server
// answered 401: settled, with no failure and no retry (supervisor's
// AuthRequiredError).
func authRequired(obs supervisor.Observed) bool {
	return obs.State == v1alpha1.MCPServerStateAuthRequired
}

// failed reports whether obs records a failure of the server's own, which
// arms its restart backoff; a stop asked for never does.
func failed(obs supervisor.Observed) bool {
	return !obs.Running() && !obs.State.Transient() && !obs.NextRetryAfter.IsZero()
}

// restarting holds for an observation of a server the supervisor is
// replacing for a changed spec, between the stop of its old instance and
// the start of the new one: not failed (yet).
func restarting(obs supervisor.Observed) bool {
	return obs.Replacing && obs.State != v1alpha1.MCPServerStateFailed
}

// naming returns the declared Workflows whose definition in force needs
// one of tools, or a tool whose name begins with starting (the names of a
// server that began or ended its start: the workflows waiting for it):
// needs it itself or through a workflow it calls, at any depth
// (workflow.Needed), since its verdict follows that one's.
func (br *Bridge) naming(tools []string, starting string) []events.Key {
	if len(tools) == 0 && starting == "" {
		return nil
	}
	var keys []events.Key
	for _, e := range br.index.List(v1alpha1.KindWorkflow) {
		wf, ok := e.Object.(*v1alpha1.Workflow)
		if !ok {
			continue
		}
		for tool := range workflow.Needed(br.index, wf) {
			if _, hit := slices.BinarySearch(tools, tool); hit || starting != "" && strings.HasPrefix(tool, starting) {
				keys = append(keys, e.Key)
				break
			}
		}
	}
	return keys
}

// naming is how obs's server's tools are exposed.
func naming(obs supervisor.Observed) catalogue.Naming {
	n := catalogue.Naming{ToolPrefix: obs.ToolPrefix}
	if obs.Family != nil {
		n.Family, n.InstanceArg = obs.Family.Name, obs.Family.InstanceArg
	}
	return n
}

// OnUserChange applies a change of a user's own connection to a server
// (supervisor.Options.OnUserChange) to that user's view of the catalogue:
// its tools, named as the server's shared ones are (its toolPrefix and
// family, from the server's last observation), or, gone, none. The
// catalogue tells the router, which tells that user's sessions alone.
func (br *Bridge) OnUserChange(conn supervisor.UserObserved, gone bool) {
	key := conn.Key.Canonical()
	if gone {
		br.cat.RemoveFor(conn.Owner, key)
		return
	}
	br.mu.Lock()
	named := br.named[key]
	br.mu.Unlock()
	br.cat.UpdateFor(conn.Owner, key, named, conn.Tools, conn.ListedAt)
}
