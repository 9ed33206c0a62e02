package pipeline

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/musterd/musterd/pkg/bus"
	"github.com/musterd/musterd/pkg/coordinator"
	"github.com/musterd/musterd/pkg/debouncer"
	"github.com/musterd/musterd/pkg/lifecycle"
	"github.com/musterd/musterd/pkg/reconcilers"
	"github.com/musterd/musterd/pkg/statusync"
)

// Options configures a Pipeline. The zero value runs every stage with its
// defaults, with no reconcilers and statuses kept in memory.
type Options struct {
	// Logger is handed to every stage. Default slog.Default().
	Logger *slog.Logger
	// Reconcilers, one per kind.
	Reconcilers []reconcilers.Reconciler
	// Debouncer, Coordinator and Store configure those stages; see their
	// packages for defaults. Their loggers are filled in, and so are their
	// metrics hooks unless set: a Coordinator.Observer given replaces the
	// reconcile metrics.
	Debouncer   debouncer.Options
	Coordinator coordinator.Options
	Store       statusync.StoreOptions
	// MetricsCapacity bounds the metrics subscriber's mailbox; default
	// that of statusync.MetricsOptions.
	MetricsCapacity int
	// Registry receives every metric. Default: a new prometheus.Registry.
	Registry *prometheus.Registry
	// Lifecycle configures the component registry; its Bus is the
	// pipeline's.
	Lifecycle lifecycle.Options
	// Bus is the pipeline's bus. Default: a new one. Pass one to build
	// components that need it before the pipeline, such as Foundations.
	Bus *bus.Bus
	// Foundations are components every stage depends on: they start
	// first, in order, each after the one before, and stop last, in
	// reverse, after every stage and every component added with Add. A
	// trace recorder belongs here (it records the stages' last events), and
	// whatever must outlive the reconcilers (the supervisor's stopper).
	Foundations []lifecycle.Component
}

// Pipeline is a wired set of stages. Its fields are the stages themselves,
// for callers that query them (the status store for an API, the
// coordinator for manual triggers).
type Pipeline struct {
	Bus         *bus.Bus
	Debouncer   *debouncer.Debouncer
	Coordinator *coordinator.Coordinator
	// Reconcilers holds Options.Reconcilers; its Status reports what they
	// observed of each resource.
	Reconcilers *reconcilers.Registry
	Store       *statusync.Store
	Metrics     *statusync.Metrics
	// Components runs the stages and whatever Add registers.
	Components *lifecycle.Registry
	// Registry holds every stage's metrics.
	Registry *prometheus.Registry
}

// New builds a pipeline. Nothing runs until Run.
func New(opts Options) (*Pipeline, error) {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Registry == nil {
		opts.Registry = prometheus.NewRegistry()
	}
	if opts.Bus == nil {
		opts.Bus = bus.New(bus.Options{Logger: opts.Logger})
	}
	p := &Pipeline{Bus: opts.Bus, Registry: opts.Registry}

	var err error
	p.Reconcilers, err = reconcilers.NewRegistry(opts.Reconcilers...)
	if err != nil {
		return nil, err
	}
	queueMetrics := statusync.NewWorkqueueMetricsProvider(opts.Registry)

	opts.Debouncer.Logger = opts.Logger
	if p.Debouncer, err = debouncer.New(p.Bus, opts.Debouncer); err != nil {
		return nil, err
	}
	opts.Coordinator.Logger = opts.Logger
	if opts.Coordinator.MetricsProvider == nil {
		opts.Coordinator.MetricsProvider = queueMetrics
	}
	reconciles := &lateObserver{}
	if opts.Coordinator.Observer == nil {
		opts.Coordinator.Observer = reconciles
	}
	if p.Coordinator, err = coordinator.New(p.Bus, p.Reconcilers, opts.Coordinator); err != nil {
		return nil, err
	}
	opts.Store.Logger = opts.Logger
	if opts.Store.QueueMetrics == nil {
		opts.Store.QueueMetrics = queueMetrics
	}
	p.Store = statusync.NewStore(p.Bus, opts.Store)
	if p.Metrics, err = statusync.NewMetrics(p.Bus, statusync.MetricsOptions{
		Registerer:         opts.Registry,
		Capacity:           opts.MetricsCapacity,
		ActiveWorkers:      p.Coordinator.ActiveWorkers,
		ReconcilePanics:    p.Coordinator.Panics,
		DebouncerCoalesced: p.Debouncer.Coalesced,
	}); err != nil {
		return nil, err
	}
	reconciles.Observer = p.Metrics

	opts.Lifecycle.Bus = p.Bus
	if opts.Lifecycle.Logger == nil {
		opts.Lifecycle.Logger = opts.Logger
	}
	p.Components = lifecycle.New(opts.Lifecycle)
	var foundations []string
	for _, f := range opts.Foundations {
		if err := p.Components.Register(f, lifecycle.DependsOn(foundations...)); err != nil {
			return nil, fmt.Errorf("pipeline: %w", err)
		}
		foundations = append(foundations, f.Name())
	}
	coordinatorOpts := []lifecycle.Option{lifecycle.Critical(), lifecycle.DependsOn(p.Store.Name(), p.Metrics.Name())}
	debouncerDeps := []string{p.Coordinator.Name()}
	if opts.Lifecycle.Elected != nil {
		// Under leader election only the coordinator, which runs the
		// reconcilers, waits for the lease. The debouncer runs on every
		// replica: it must see its watchers' IndexSynchronized whenever
		// that comes; on a follower its triggers reach nobody.
		coordinatorOpts = append(coordinatorOpts, lifecycle.LeaderOnly())
		debouncerDeps = []string{p.Store.Name(), p.Metrics.Name()}
	}
	for _, reg := range []struct {
		c    lifecycle.Component
		opts []lifecycle.Option
	}{
		{p.Store, []lifecycle.Option{lifecycle.Critical(), lifecycle.DependsOn(foundations...)}},
		{p.Metrics, []lifecycle.Option{lifecycle.Critical(), lifecycle.DependsOn(foundations...)}},
		{p.Coordinator, coordinatorOpts},
		{p.Debouncer, []lifecycle.Option{lifecycle.Critical(), lifecycle.DependsOn(debouncerDeps...)}},
	} {
		if err := p.Components.Register(reg.c, reg.opts...); err != nil {
			return nil, fmt.Errorf("pipeline: %w", err)
		}
	}
	return p, nil
}

// lateObserver hands the coordinator's reconciles to the metrics, which are
// made after the coordinator because they read its gauges. Its Observer is
// set before anything runs.
type lateObserver struct{ coordinator.Observer }

// Add registers a further component, such as a watcher. It starts after
// the core stages (after the debouncer, unless opts say otherwise) and stops
// before them.
func (p *Pipeline) Add(c lifecycle.Component, opts ...lifecycle.Option) error {
	opts = append([]lifecycle.Option{lifecycle.DependsOn(p.Debouncer.Name())}, opts...)
	return p.Components.Register(c, opts...)
}

// Run runs every component until ctx is done or a critical one fails, then
// stops them in reverse order and closes the bus.
func (p *Pipeline) Run(ctx context.Context) error {
	defer p.Bus.Close()
	return p.Components.Run(ctx)
}
