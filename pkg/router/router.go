package router

import (
	"context"
	"errors"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/musterd/musterd/internal/registry"
	"github.com/musterd/musterd/pkg/catalogue"
	"github.com/musterd/musterd/pkg/events"
	"github.com/musterd/musterd/pkg/supervisor"
)

// Servers is what the router needs of the supervisor: the calls into a
// running server's live session. *supervisor.Supervisor is one.
type Servers interface {
	CallTool(ctx context.Context, key events.Key, params *mcp.CallToolParams, progress func(*mcp.ProgressNotificationParams)) (*mcp.CallToolResult, error)
	ListResources(ctx context.Context, key events.Key) ([]*mcp.Resource, error)
	ListResourceTemplates(ctx context.Context, key events.Key) ([]*mcp.ResourceTemplate, error)
	ReadResource(ctx context.Context, key events.Key, params *mcp.ReadResourceParams) (*mcp.ReadResourceResult, error)
	ListPrompts(ctx context.Context, key events.Key) ([]*mcp.Prompt, error)
	GetPrompt(ctx context.Context, key events.Key, params *mcp.GetPromptParams) (*mcp.GetPromptResult, error)
}

var _ Servers = (*supervisor.Supervisor)(nil)

// Options configure a Router.
type Options struct {
	// Catalogue names and routes the tools. Required.
	Catalogue *catalogue.Catalogue
	// Servers makes the calls: the supervisor. Required.
	Servers Servers
	// Registerer, if set, receives the router's metrics:
	// musterd_mcp_tool_calls_total{server,tool,result},
	// musterd_mcp_tool_call_duration_seconds{server,tool} and
	// musterd_mcp_catalogue_age_seconds{server}. Default: none.
	Registerer prometheus.Registerer
	// Logger receives a debug line per call, its arguments redacted.
	// Default slog.Default().
	Logger *slog.Logger
	// Now is the clock of the catalogue age. Default time.Now.
	Now func() time.Time
	// Declared, if set, says whether a server is still declared, so that
	// the call of a tool whose server went says whether the server was
	// stopped or its definition deleted. Default: every server counts as
	// declared (stopped).
	Declared func(events.Key) bool
	// Core, if set, offers the core tools (package coretools), exposed
	// before every other tool: a server or workflow offering a core tool's
	// name is skipped. Default: none.
	Core Source
	// Sources offer further tools, exposed after the servers' in their
	// order: the workflows (package workflowrun). Default: none.
	Sources []Source
	// OwnResources, if set, offers resources musterd serves itself,
	// listed and read ahead of the servers' (ownresources.go). Default:
	// none.
	OwnResources ResourceSource
	// ListTimeout bounds each background listing of a server's resources,
	// resource templates and prompts. Default 10s.
	ListTimeout time.Duration
	// CallInterval is the length of the intervals in which each server's
	// recent calls are counted (CallHistory holds the last CallIntervals
	// of them). Default DefaultCallInterval, 10s.
	CallInterval time.Duration
	// OnCallsCounted, if set, is told each server's calls of an interval
	// once the interval is over: once per interval, only for a server that
	// had calls in it (a burst of calls is one call of it), never while
	// nobody calls. Calls come from a timer's goroutine, no lock held, and
	// may come concurrently for different servers. Default nil: nobody is
	// told; the history is kept all the same.
	OnCallsCounted func(server events.Key, counted CallCount)
}

// DefaultListTimeout is Options.ListTimeout's default.
const DefaultListTimeout = 10 * time.Second

// listWatcher is what a Servers may offer to say that a server's resources
// or prompts changed: *supervisor.Supervisor's WatchLists.
type listWatcher interface {
	WatchLists(fn func(key events.Key)) (cancel func())
}

// Router serves the running servers' tools, resources and prompts to the
// MCP endpoint: it lists them from the catalogue and the servers, and
// routes each call to its server's live session. Make one with New.
type Router struct {
	cat     *catalogue.Catalogue
	servers Servers
	log     *slog.Logger
	metrics *metrics     // nil without a Registerer
	calls   *callHistory // calls.go

	listTimeout time.Duration
	listings    listings
	declared    func(events.Key) bool

	subs subscriptions // subscribe.go

	core    Source
	sources []Source
	own     ResourceSource
	// exposed is the exposed set Tools last computed; exposedMu
	// serializes its computing.
	exposed   atomic.Pointer[exposed]
	exposedMu sync.Mutex
	// owned is, per owner whose view has servers of its own, the exposed
	// set its ToolsFor last computed (owners.go): owner → *exposed.
	owned sync.Map

	mu            sync.Mutex
	watchers      registry.Funcs[func()]
	ownerWatchers registry.Funcs[func(owner string)]
	pending       bool            // a change is to be told to the watchers
	pendingOwners map[string]bool // owners whose view alone changed, to be told to ownerWatchers
	delivering    chan struct{}   // non-nil while a goroutine tells them
}

// New returns a router over opts.Catalogue and opts.Servers. It fails if a
// required option is missing or its metrics are registered already.
func New(opts Options) (*Router, error) {
	switch {
	case opts.Catalogue == nil:
		return nil, errors.New("router: Options.Catalogue is required")
	case opts.Servers == nil:
		return nil, errors.New("router: Options.Servers is required")
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.ListTimeout <= 0 {
		opts.ListTimeout = DefaultListTimeout
	}
	if opts.CallInterval <= 0 {
		opts.CallInterval = DefaultCallInterval
	}
	r := &Router{
		cat:         opts.Catalogue,
		servers:     opts.Servers,
		log:         opts.Logger.With("component", "router"),
		listTimeout: opts.ListTimeout,
		declared:    opts.Declared,
		core:        opts.Core,
		sources:     opts.Sources,
		own:         opts.OwnResources,
		calls:       newCallHistory(opts.CallInterval, opts.OnCallsCounted),
	}
	r.exposed.Store(&exposed{routes: map[string]toolRoute{}})
	r.listings.init(r)
	if opts.Registerer != nil {
		m, err := newMetrics(opts.Registerer, opts.Catalogue, opts.Now)
		if err != nil {
			return nil, err
		}
		r.metrics = m
	}
	// The subscriptions live as long as the catalogue and the supervisor:
	// a router is made once per daemon.
	opts.Catalogue.Subscribe(func(c catalogue.Change) {
		if c.Owner != "" {
			// One owner's view alone: its sessions are told, nobody
			// else; the servers' listings are the catalogue's.
			r.ownerViewChanged(c) // owners.go
			return
		}
		if len(c.Tools) > 0 {
			r.changed()
		}
		r.listings.schedule(c.Server, c.Running)
		if !c.Running && r.declared != nil && !r.declared(c.Server) {
			r.calls.forget(c.Server.Canonical()) // deleted: its history goes with it
		}
	})
	if w, ok := opts.Servers.(listWatcher); ok {
		w.WatchLists(func(key events.Key) { r.listings.schedule(key.Canonical(), true) })
	}
	for _, s := range opts.Catalogue.Servers() {
		r.listings.schedule(s.Key, true)
	}
	return r, nil
}

// callServer calls the exposed tool name of a managed server in view, the
// caller's: the owning server's tool or, for a family tool, the tool of the member args names
// (the instance argument is removed before the call), or a tool whose
// server stopped running (see Claims). It notes the server and its tool in
// l and counts the call in the metrics.
func (r *Router) callServer(ctx context.Context, view catalogue.View, name string, args map[string]any,
	progress func(*mcp.ProgressNotificationParams), l *callLog) (*mcp.CallToolResult, error) {
	target, err := view.Resolve(name, args)
	if errors.Is(err, catalogue.ErrUnknownTool) {
		if res, gone, goneErr := r.callGone(ctx, view, name, args, progress); gone { // gone.go
			return res, goneErr
		}
	}
	if err != nil {
		return nil, err
	}
	l.server, l.serverTool, l.args = target.Server.String(), target.Tool, target.Arguments
	start := time.Now()
	params := &mcp.CallToolParams{Name: target.Tool, Arguments: target.Arguments}
	if target.Arguments == nil {
		params.Arguments = map[string]any{}
	}
	res, err := r.servers.CallTool(ctx, target.Server, params, progress)
	result := outcome(res, err)
	if r.metrics != nil {
		r.metrics.observeCall(target.Server, name, result, time.Since(start))
	}
	r.calls.record(target.Server, result != resultOK)
	return res, err
}

// OnChange registers fn to be called after Tools() changed (a tool
// appeared, went or has another definition) or Resources(),
// ResourceTemplates() or Prompts() did. Calls come from a goroutine of the
// router's, one at a time, never under a lock of the supervisor's or the
// catalogue's; changes that come while fn runs are coalesced into one more
// call, after which the lists have them all. The returned func ends the
// registration.
func (r *Router) OnChange(fn func()) (cancel func()) { return r.watchers.Add(fn) }

// SourceChanged tells the router that a source's offer (Options.Core,
// Options.Sources) may have changed, so that its OnChange watchers are
// told as they are of the servers' changes: the one path by which a change
// of what is exposed reaches the endpoint. It never blocks.
func (r *Router) SourceChanged() { r.changed() }

// changed tells the watchers that the lists changed. It may run under the
// supervisor's lock (from the catalogue's subscription), so it only marks
// the change and makes sure a goroutine tells them.
func (r *Router) changed() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.pending = true
	if r.delivering == nil {
		r.delivering = make(chan struct{})
		go r.deliver(r.delivering)
	}
}

func (r *Router) deliver(done chan struct{}) {
	for {
		r.mu.Lock()
		if !r.pending && len(r.pendingOwners) == 0 {
			r.delivering = nil
			r.mu.Unlock()
			close(done)
			return
		}
		global, owners := r.pending, r.pendingOwners
		r.pending, r.pendingOwners = false, nil
		r.mu.Unlock()
		if global {
			for _, fn := range r.watchers.All() {
				fn()
			}
		}
		for _, owner := range slices.Sorted(maps.Keys(owners)) {
			for _, fn := range r.ownerWatchers.All() {
				fn(owner)
			}
		}
	}
}
