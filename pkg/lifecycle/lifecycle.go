package lifecycle

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/musterd/musterd/pkg/bus"
	"github.com/musterd/musterd/pkg/redact"
)

// Component is one stage of the pipeline.
type Component interface {
	// Name identifies the component in dependencies, health and logs. It
	// must be unique within a registry.
	Name() string
	// Start runs the component and blocks until ctx is done. It returns nil
	// after a clean stop; returning earlier is a failure.
	Start(ctx context.Context) error
}

// HealthChecker is implemented by components that can tell whether they
// work. HealthCheck must be quick and must not block: it runs on the health
// loop and on every call of [Registry.Health].
type HealthChecker interface {
	HealthCheck() error
}

// SubscriptionReadySignaler is implemented by components that subscribe to
// the bus in Start. The channel is closed once they have subscribed; the
// bus barrier and the component's dependents wait for it. A nil channel
// counts as closed. A component that has not subscribed within
// Options.StartTimeout of its Start fails.
type SubscriptionReadySignaler interface {
	SubscriptionReady() <-chan struct{}
}

// BusyReporter is implemented by components that handle one event at a time,
// usually by delegating to their bus.Subscription. It reports since when the
// event in hand has been handled, if one is.
type BusyReporter interface {
	BusySince() (time.Time, bool)
}

// Defaults of Options.
const (
	DefaultStartTimeout   = time.Minute
	DefaultStopTimeout    = 10 * time.Second
	DefaultHealthInterval = 10 * time.Second
	DefaultStallLimit     = time.Minute
)

// Options configures a Registry. The zero value is usable.
type Options struct {
	// Bus, if set, has its start barrier released once every component
	// that starts now has subscribed.
	Bus *bus.Bus
	// Logger receives start, stop, failure and health changes. Default:
	// slog.Default().
	Logger *slog.Logger
	// StartTimeout is how long a component may take, from the call of its
	// Start, to signal SubscriptionReady. One that takes longer fails with
	// an error matching ErrStartTimeout and is cancelled: if it is Critical
	// the registry stops and Run returns that error; otherwise the bus
	// barrier is released without it and its dependents do not start.
	// Without this limit one stuck component would hold the barrier, and
	// with it every event published, for ever. Default: DefaultStartTimeout.
	StartTimeout time.Duration
	// StopTimeout is the total budget for stopping all components. Default:
	// DefaultStopTimeout.
	StopTimeout time.Duration
	// HealthInterval is how often health is evaluated. Default:
	// DefaultHealthInterval.
	HealthInterval time.Duration
	// StallLimit is how long a component may be busy on one event before it
	// is unhealthy. Default: DefaultStallLimit.
	StallLimit time.Duration
	// Elected is closed when this replica becomes the leader. Nil means
	// leader at once. LeaderOnly components start when it is closed.
	//
	// With Elected set, the bus barrier does not wait for leader-only
	// components. A follower may wait for leadership indefinitely, and the
	// barrier holds every event published meanwhile in memory, while the
	// followers' own components (watchers, status readers) must run. A
	// leader-only component therefore must not rely on events published
	// before it subscribed: when it starts it makes a full pass instead (the
	// index-synced or resync trigger that reconciles every key).
	Elected <-chan struct{}
}

// Option qualifies a registration.
type Option func(*registration)

type registration struct {
	deps       []string
	critical   bool
	leaderOnly bool
}

// DependsOn makes the component start only after the named components have
// started and subscribed, and stop before them.
func DependsOn(names ...string) Option {
	return func(r *registration) { r.deps = append(r.deps, names...) }
}

// Critical makes the component's failure stop the whole registry.
func Critical() Option {
	return func(r *registration) { r.critical = true }
}

// LeaderOnly makes the component start only once Options.Elected is closed.
// Whatever depends on it must be leader-only too.
func LeaderOnly() Option {
	return func(r *registration) { r.leaderOnly = true }
}

// State is where a component is in its life.
type State string

// States.
const (
	// StatePending: not started yet, waiting for dependencies or election.
	StatePending State = "pending"
	// StateStarting: Start was called; the component has not yet signalled
	// SubscriptionReady.
	StateStarting State = "starting"
	// StateRunning: started and subscribed.
	StateRunning State = "running"
	// StateStopped: Start returned during shutdown.
	StateStopped State = "stopped"
	// StateFailed: Start failed, panicked, returned before shutdown, or
	// could not be called because a dependency exited first.
	StateFailed State = "failed"
)

// ComponentHealth is one component's health.
type ComponentHealth struct {
	Name    string
	State   State
	Healthy bool
	// Err says why the component failed or is unhealthy; for a stopped
	// component, the error its Start returned, if any. It is the
	// component's own error, unredacted: pass its text through
	// redact.String before showing it.
	Err error
}

// errExitedEarly is the failure of a Start that returned nil while the
// registry was not stopping.
var errExitedEarly = errors.New("its Start returned before shutdown")

// ErrStartTimeout is matched (errors.Is) by the failure of a component that
// did not signal SubscriptionReady within Options.StartTimeout.
var ErrStartTimeout = errors.New("did not become ready")

// errStopping aborts start up: the registry is stopping, or a critical
// component's failure is about to stop it, so the barrier must stay held.
var errStopping = errors.New("lifecycle: stopping")

// Registry runs registered components. Make it with New.
type Registry struct {
	opts Options
	log  *slog.Logger

	mu         sync.Mutex
	entries    []*entry // registration order
	byName     map[string]*entry
	running    bool     // Run was called
	launched   []*entry // start order
	stopping   bool
	startedAll bool // every component that starts now has started and subscribed
	stopCh     chan struct{}
	base       context.Context // parent of the components' contexts

	fatal chan error // the first critical failure

	healthMu    sync.Mutex
	lastHealthy map[string]bool
}

type entry struct {
	registration
	comp Component
	name string

	// Once start up is settled, exactly one of ready and unready is closed:
	// ready once the component has started and subscribed, unready once it
	// never will (it exited or timed out first, or a dependency failed).
	// Neither is closed if the registry stops first. done is closed once
	// Start has returned.
	ready   chan struct{}
	unready chan struct{}
	done    chan struct{}
	cancel  context.CancelFunc

	state State // guarded by Registry.mu
	err   error // guarded by Registry.mu
}

// New returns an empty registry.
func New(opts Options) *Registry {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.StartTimeout <= 0 {
		opts.StartTimeout = DefaultStartTimeout
	}
	if opts.StopTimeout <= 0 {
		opts.StopTimeout = DefaultStopTimeout
	}
	if opts.HealthInterval <= 0 {
		opts.HealthInterval = DefaultHealthInterval
	}
	if opts.StallLimit <= 0 {
		opts.StallLimit = DefaultStallLimit
	}
	return &Registry{
		opts:        opts,
		log:         opts.Logger,
		byName:      map[string]*entry{},
		stopCh:      make(chan struct{}),
		fatal:       make(chan error, 1),
		lastHealthy: map[string]bool{},
	}
}

// Register adds c. Dependencies are checked by Run, so components may be
// registered in any order.
func (r *Registry) Register(c Component, opts ...Option) error {
	if c == nil {
		return errors.New("lifecycle: nil component")
	}
	name := c.Name()
	if name == "" {
		return fmt.Errorf("lifecycle: component of type %T has no name", c)
	}
	e := &entry{comp: c, name: name, state: StatePending,
		ready: make(chan struct{}), unready: make(chan struct{}), done: make(chan struct{})}
	for _, o := range opts {
		o(&e.registration)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.running {
		return fmt.Errorf("lifecycle: cannot register %q: Run was called", name)
	}
	if _, taken := r.byName[name]; taken {
		return fmt.Errorf("lifecycle: a component named %q is registered", name)
	}
	r.entries = append(r.entries, e)
	r.byName[name] = e
	return nil
}

// Run checks the dependency graph, starts the components and blocks until
// ctx is done or a critical component fails; then it stops every component
// and returns. It returns nil after a stop asked for by ctx, and an error
// naming the critical component that failed or the components that did not
// stop in time. Errors components return while stopping are logged. Run may
// be called once.
//
// The text of Run's error, like every error text lifecycle logs, is passed
// through redact.String, since components' errors may carry credentials;
// errors.Is and errors.As still see the original errors.
func (r *Registry) Run(ctx context.Context) error {
	if err := r.run(ctx); err != nil {
		return redactedError{err}
	}
	return nil
}

func (r *Registry) run(ctx context.Context) error {
	r.mu.Lock()
	if r.running {
		r.mu.Unlock()
		return errors.New("lifecycle: Run called twice")
	}
	r.running = true
	r.base = context.WithoutCancel(ctx) // components keep ctx's values but are cancelled one by one
	r.mu.Unlock()

	if err := r.validate(); err != nil {
		return err
	}
	if ctx.Err() != nil {
		return nil
	}

	healthDone := make(chan struct{})
	go r.healthLoop(healthDone)

	// The barrier waits for the components that start now; leader-only ones
	// waiting for an election start in a group of their own (see
	// Options.Elected).
	var now, later errgroup.Group
	for _, e := range r.entries {
		g := &now
		if e.leaderOnly && r.opts.Elected != nil {
			g = &later
		}
		g.Go(func() error { return r.launch(e) })
	}
	startupDone := make(chan struct{})
	go func() {
		defer close(startupDone)
		if now.Wait() == nil {
			r.releaseBarrier()
		}
		_ = later.Wait() // its only error is errStopping
	}()

	var cause error
	select {
	case <-ctx.Done():
		r.log.Info("lifecycle: stopping", "reason", logText(context.Cause(ctx)))
	case cause = <-r.fatal:
		r.log.Error("lifecycle: stopping after a critical failure", "error", logText(cause))
	}
	stopErr := r.stop()
	<-startupDone
	<-healthDone
	return errors.Join(cause, stopErr)
}

// validate rejects unknown dependencies, dependencies of followers on
// leader-only components, and cycles.
func (r *Registry) validate() error {
	var errs []error
	for _, e := range r.entries {
		for _, d := range e.deps {
			dep, ok := r.byName[d]
			switch {
			case !ok:
				errs = append(errs, fmt.Errorf("lifecycle: %q depends on unknown component %q", e.name, d))
			case dep.leaderOnly && !e.leaderOnly:
				errs = append(errs, fmt.Errorf("lifecycle: %q depends on leader-only %q but is not leader-only: it would wait for an election on every follower", e.name, d))
			}
		}
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}

	const (
		unvisited = iota
		visiting
		visited
	)
	mark := map[*entry]int{}
	var path []string
	var visit func(e *entry) error
	visit = func(e *entry) error {
		switch mark[e] {
		case visiting:
			cycle := append(path[slices.Index(path, e.name):], e.name)
			return fmt.Errorf("lifecycle: cycle: %s", strings.Join(cycle, " → "))
		case visited:
			return nil
		}
		mark[e] = visiting
		path = append(path, e.name)
		for _, d := range e.deps {
			if err := visit(r.byName[d]); err != nil {
				return err
			}
		}
		path = path[:len(path)-1]
		mark[e] = visited
		return nil
	}
	for _, e := range r.entries {
		if err := visit(e); err != nil {
			return err
		}
	}
	return nil
}

// launch waits for e's turn, starts it and waits until it has subscribed,
// exited or run out of StartTimeout. It returns errStopping if the registry
// stops first or e is critical and failed.
func (r *Registry) launch(e *entry) error {
	if e.leaderOnly && r.opts.Elected != nil {
		select {
		case <-r.opts.Elected:
		case <-r.stopCh:
			return errStopping
		}
	}
	for _, d := range e.deps {
		dep := r.byName[d]
		select {
		case <-dep.ready:
			continue // a dependency that became ready counts even if it has failed since
		default:
		}
		select {
		case <-dep.ready:
		case <-dep.unready:
			return r.notStarted(e, fmt.Errorf("not started: dependency %q failed before it was ready", d))
		case <-r.stopCh:
			return errStopping
		}
	}

	var subscribed <-chan struct{}
	if s, ok := e.comp.(SubscriptionReadySignaler); ok {
		subscribed = s.SubscriptionReady()
	}
	r.mu.Lock()
	if r.stopping {
		r.mu.Unlock()
		return errStopping
	}
	ctx, cancel := context.WithCancel(r.base)
	e.cancel = cancel
	e.state = StateStarting
	r.launched = append(r.launched, e)
	r.mu.Unlock()
	r.log.Info("lifecycle: starting component", "component", e.name)
	go r.start(ctx, e)

	if subscribed != nil {
		timeout := time.NewTimer(r.opts.StartTimeout)
		defer timeout.Stop()
		select {
		case <-subscribed:
		case <-e.done: // exited has recorded and reported the failure
			close(e.unready)
			return abandoned(e)
		case <-timeout.C:
			return r.timedOut(e)
		case <-r.stopCh:
			return errStopping
		}
	}
	r.mu.Lock()
	if e.state == StateStarting {
		e.state = StateRunning
	}
	r.mu.Unlock()
	close(e.ready)
	r.log.Debug("lifecycle: component ready", "component", e.name)
	return nil
}

// notStarted records that e will not start because a dependency failed, and
// reports it as a failure of e. If the registry is stopping, e stays
// pending, as start up was abandoned. The result is launch's.
func (r *Registry) notStarted(e *entry, err error) error {
	r.mu.Lock()
	if r.stopping {
		r.mu.Unlock()
		return errStopping
	}
	e.state, e.err = StateFailed, err
	r.mu.Unlock()
	close(e.unready)
	r.failed(e, err, fmt.Errorf("lifecycle: critical component %q failed: %w", e.name, err))
	return abandoned(e)
}

// timedOut fails e, which has not subscribed within StartTimeout, cancels
// it and reports the failure; the timeout error itself is Run's error if e
// is critical. The result is launch's.
func (r *Registry) timedOut(e *entry) error {
	err := fmt.Errorf("lifecycle: %q %w within %s", e.name, ErrStartTimeout, r.opts.StartTimeout)
	r.mu.Lock()
	if r.stopping {
		r.mu.Unlock()
		return errStopping
	}
	// Start may have returned at this very instant; then exited has
	// recorded and reported that failure.
	failedNow := e.state == StateStarting
	if failedNow {
		e.state, e.err = StateFailed, err
	}
	r.mu.Unlock()
	close(e.unready)
	if failedNow {
		e.cancel()
		r.failed(e, err, err)
	}
	return abandoned(e)
}

// abandoned is launch's result when e will never become ready.
func abandoned(e *entry) error {
	if e.critical {
		return errStopping
	}
	return nil
}

// start calls Start, turning a panic into an error.
func (r *Registry) start(ctx context.Context, e *entry) {
	err := func() (err error) {
		defer func() {
			if p := recover(); p != nil {
				err = fmt.Errorf("panic: %v", p)
				// The stack is logged whole: it holds code locations, not
				// values.
				r.log.Error("lifecycle: component panicked", "component", e.name, "panic", redact.String(fmt.Sprint(p)), "stack", string(debug.Stack()))
			}
		}()
		return e.comp.Start(ctx)
	}()
	r.exited(e, err)
}

// exited records that e's Start returned err and reports a failure if the
// registry was not stopping. It closes e.done last, so that Run, which waits
// for it, returns only after the component's last log record.
func (r *Registry) exited(e *entry, err error) {
	defer close(e.done)
	r.mu.Lock()
	stopping := r.stopping
	timedOut := e.state == StateFailed // only timedOut fails a running Start
	switch {
	case timedOut:
		// Keep the start timeout as the failure; it has been reported.
	case stopping && (err == nil || errors.Is(err, context.Canceled)):
		e.state, err = StateStopped, nil
	case stopping:
		e.state, e.err = StateFailed, err
	default:
		if err == nil {
			err = errExitedEarly
		}
		e.state, e.err = StateFailed, err
	}
	r.mu.Unlock()

	switch {
	case timedOut:
		r.log.Info("lifecycle: component returned after its start timed out", "component", e.name, "error", logText(err))
	case stopping && err != nil:
		r.log.Warn("lifecycle: component failed while stopping", "component", e.name, "error", logText(err))
	case stopping:
		r.log.Info("lifecycle: component stopped", "component", e.name)
	default:
		r.failed(e, err, fmt.Errorf("lifecycle: critical component %q failed: %w", e.name, err))
	}
}

// failed reports e's failure err outside shutdown: if e is critical, fatal
// stops the registry and becomes Run's error; otherwise err is logged.
func (r *Registry) failed(e *entry, err, fatal error) {
	if !e.critical {
		r.log.Error("lifecycle: component failed; the others keep running", "component", e.name, "error", logText(err))
		return
	}
	select {
	case r.fatal <- fatal:
	default: // another critical failure is stopping the registry already
	}
}

func (r *Registry) releaseBarrier() {
	r.mu.Lock()
	if r.stopping {
		r.mu.Unlock()
		return
	}
	r.startedAll = true
	r.mu.Unlock()
	if r.opts.Bus != nil {
		r.opts.Bus.Start()
	}
	r.log.Info("lifecycle: every component started and subscribed; bus barrier released")
}

// stop cancels the started components in reverse start order, waiting for
// each, within StopTimeout in total.
func (r *Registry) stop() error {
	r.mu.Lock()
	r.stopping = true
	close(r.stopCh)
	launched := slices.Clone(r.launched)
	r.mu.Unlock()

	deadline := time.NewTimer(r.opts.StopTimeout)
	defer deadline.Stop()
	for i := len(launched) - 1; i >= 0; i-- {
		e := launched[i]
		e.cancel()
		select {
		case <-e.done:
		case <-deadline.C:
			// No budget is left: cancel the rest without waiting.
			var unwaited []string
			for j := i - 1; j >= 0; j-- {
				launched[j].cancel()
				select {
				case <-launched[j].done:
				default:
					unwaited = append(unwaited, fmt.Sprintf("%q", launched[j].name))
				}
			}
			err := fmt.Errorf("lifecycle: stop timeout %s exceeded: %q did not return", r.opts.StopTimeout, e.name)
			if len(unwaited) > 0 {
				err = fmt.Errorf("%w; cancelled without waiting: %s", err, strings.Join(unwaited, ", "))
			}
			return err
		}
	}
	return nil
}

// Ready reports whether every component that starts now has started and
// subscribed, so the bus barrier is released, and the registry is not
// stopping. Under an election, leader-only components are not counted, so
// a follower is ready.
func (r *Registry) Ready() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.startedAll && !r.stopping
}

func (r *Registry) healthLoop(done chan<- struct{}) {
	defer close(done)
	tick := time.NewTicker(r.opts.HealthInterval)
	defer tick.Stop()
	for {
		select {
		case <-tick.C:
			r.evaluate()
		case <-r.stopCh:
			return
		}
	}
}

// Health evaluates every component's health now, sorted by name.
func (r *Registry) Health() []ComponentHealth { return r.evaluate() }

func (r *Registry) evaluate() []ComponentHealth {
	r.mu.Lock()
	entries := slices.Clone(r.entries)
	out := make([]ComponentHealth, len(entries))
	for i, e := range entries {
		out[i] = ComponentHealth{Name: e.name, State: e.state, Healthy: e.state != StateFailed, Err: e.err}
	}
	r.mu.Unlock()

	now := time.Now()
	for i, e := range entries {
		if st := out[i].State; st != StateStarting && st != StateRunning {
			continue
		}
		var errs []error
		if hc, ok := e.comp.(HealthChecker); ok {
			if err := hc.HealthCheck(); err != nil {
				errs = append(errs, err)
			}
		}
		if br, ok := e.comp.(BusyReporter); ok {
			if since, busy := br.BusySince(); busy {
				if d := now.Sub(since); d > r.opts.StallLimit {
					errs = append(errs, fmt.Errorf("stalled: busy on one event for %s", d))
				}
			}
		}
		if len(errs) > 0 {
			out[i].Healthy, out[i].Err = false, errors.Join(errs...)
		}
	}
	slices.SortFunc(out, func(a, b ComponentHealth) int { return strings.Compare(a.Name, b.Name) })

	r.healthMu.Lock()
	defer r.healthMu.Unlock()
	for _, h := range out {
		was, seen := r.lastHealthy[h.Name]
		if !seen {
			was = true
		}
		if h.Healthy == was {
			continue
		}
		r.lastHealthy[h.Name] = h.Healthy
		if h.Healthy {
			r.log.Info("lifecycle: component healthy again", "component", h.Name, "state", h.State)
		} else {
			r.log.Warn("lifecycle: component unhealthy", "component", h.Name, "state", h.State, "error", logText(h.Err))
		}
	}
	return out
}

// logText is err's text fit to log: redacted, and empty for nil.
func logText(err error) string {
	if err == nil {
		return ""
	}
	return redact.String(err.Error())
}

// redactedError is an error whose text is redacted, for errors that leave
// the package; errors.Is and errors.As see the original through Unwrap.
type redactedError struct{ err error }

func (e redactedError) Error() string { return redact.String(e.err.Error()) }
func (e redactedError) Unwrap() error { return e.err }
