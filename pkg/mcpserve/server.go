package mcpserve

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/musterd/musterd/pkg/api/shared"
	"github.com/musterd/musterd/pkg/controls"
	"github.com/musterd/musterd/pkg/events"
	"github.com/musterd/musterd/pkg/redact"
	"github.com/musterd/musterd/pkg/resources"
	"github.com/musterd/musterd/pkg/statusync"
)

// ServerName is the endpoint's implementation name, muster's, which
// muster's clients show.
const ServerName = "muster-aggregator"

// DefaultMaxBodyBytes bounds a request's body when Options.MaxBodyBytes is
// zero: the go-sdk's own default.
const DefaultMaxBodyBytes = mcp.DefaultMaxRequestBodyBytes

// StatusSource is where the reconcile state of resources is read;
// *statusync.Store is one.
type StatusSource interface {
	Get(key events.Key) (statusync.Status, bool)
}

// Options configure the endpoint. Index and Statuses are required; every
// other field has the default its comment names.
type Options struct {
	// Backend offers the running servers' tools, resources and prompts.
	// Default: none (only core tools and the Providers' tools are served).
	Backend Backend
	// Providers offer further tools (workflows). Default: none. A name that
	// a core tool, the Backend or an earlier provider already exposes is
	// skipped with a warning: the first source wins.
	Providers []Provider
	// Index is the desired-state index the core tools read. Required.
	Index *resources.Index
	// Statuses holds the reconcile state of resources. Required.
	Statuses StatusSource
	// ResourceStatus returns a resource's status in the v1alpha1 schema as
	// its reconciler last observed it (reconcilers.Registry.Status).
	// Default: none, and servers show no state.
	ResourceStatus func(events.Key) (any, bool)
	// WorkflowAvailability judges a workflow's availability now: whether
	// every tool it needs, through the workflows it calls at any depth,
	// is offered at this moment, and which are not
	// (workflow.Reconciler.Availability), as muster answers
	// core_workflow_available, core_workflow_list and core_workflow_get.
	// found is false when no workflow is declared at the key. Default:
	// none, and a workflow is available when the Workflow reconciler's
	// last verdict (ResourceStatus) found it valid.
	WorkflowAvailability func(events.Key) (available bool, missingTools []string, found bool)
	// ServerTools returns the names of a running server's own tools
	// (supervisor.Observed.Tools), for toolsCount. Default: none, and
	// toolsCount is left out.
	ServerTools func(events.Key) []string
	// Events is muster's view of the events (musterevents.Log), which
	// core_events lists and follows. Default: none, and core_events lists
	// nothing and refuses to follow.
	Events EventLog
	// Leader reports, under leader election, whether this replica leads
	// and, when not, the leader's identity. A follower runs no server, so it
	// answers every MCP request with an error naming the leader. Default:
	// this replica always leads.
	Leader func() (identity string, leading bool)
	// Token, when not empty, is the bearer token every MCP request must
	// carry (shared.Bearer checks it, as it does the API's).
	Token string
	// Overview returns the daemon at a glance (controls.Controller.Overview,
	// what GET /api/v1/overview answers), which core_reconcile_status shows
	// when asked for no one resource. Default: none, and it shows only the
	// resources' reconcile states.
	Overview func() controls.Overview
	// Config returns the daemon's configuration as core_config_get shows
	// it: muster's MusterConfig as muster encodes it. Default: none, and
	// core_config_get answers an empty object.
	Config func() any
	// Kubernetes says the resources come from custom resources: the "mode"
	// core_mcpserver_list reports. Default false: "filesystem".
	Kubernetes bool
	// Version is the implementation version announced. Default "dev".
	Version string
	// MaxBodyBytes bounds a request body. Default DefaultMaxBodyBytes
	// (4 MiB).
	MaxBodyBytes int64
	// SessionTimeout closes a streamable session idle for this long.
	// Default: 30 minutes; a negative value never closes one.
	SessionTimeout time.Duration
	// Registerer receives the endpoint's metrics. Default: none.
	Registerer prometheus.Registerer
	// Logger defaults to slog.Default().
	Logger *slog.Logger
}

// Server is the MCP endpoint: two views of one set of exposed tools (the
// core tools, the Backend's and the Providers'), each an mcp.Server of the
// go-sdk. Make it with New, serve Handler, and call Refresh whenever what
// the Backend or a Provider offers may have changed.
type Server struct {
	opts   Options
	log    *slog.Logger
	bearer shared.Bearer

	// meta is muster's view (/mcp, /sse): the eleven meta-tools.
	meta *mcp.Server
	// direct is /mcp/direct: every exposed tool natively.
	direct *mcp.Server

	metaTools []*builtin
	coreTools []*builtin
	coreDefs  []*mcp.Tool // coreTools' definitions, built once

	metrics *metrics

	// current is the exposed set in force; Refresh replaces it whole.
	current atomic.Pointer[exposed]

	// refreshMu serializes Refresh, and guards what follows.
	refreshMu sync.Mutex
	resources map[string]string // URI → JSON of the resource registered
	prompts   map[string]string // name → JSON of the prompt registered
	templates map[string]string // URI template → JSON of the template registered

	follows follows
	sse     sseSessions // sse.go
	// subs forwards resource subscriptions (subscribe.go); nil when the
	// Backend cannot.
	subs *resourceSubs

	// watches maps each *mcp.ServerSession that has had a call to its
	// *watch, and watchIDs a streamable session's ID to the same.
	watches, watchIDs sync.Map
}

// callee is what serves a tool that musterd does not implement itself.
type callee interface {
	CallTool(ctx context.Context, name string, args map[string]any, progress func(*mcp.ProgressNotificationParams)) (*mcp.CallToolResult, error)
}

// route says who serves an exposed tool.
type route struct {
	tool    *mcp.Tool
	def     []byte // the definition's JSON, to tell a changed tool
	builtin *builtin
	callee  callee
	source  string // "core", "server" or "provider": the metrics' and logs' label
}

// exposed is one exposed set: every tool, sorted by name.
type exposed struct {
	tools  []*mcp.Tool
	routes map[string]route
	// offers is what the sources offered, in compute's order: the core
	// tools, the Backend's, then each Provider's.
	offers [][]*mcp.Tool
}

// New returns the endpoint, with the exposed set as the Backend and the
// Providers offer it now.
func New(opts Options) (*Server, error) {
	var missing []string
	if opts.Index == nil {
		missing = append(missing, "Index")
	}
	if opts.Statuses == nil {
		missing = append(missing, "Statuses")
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("mcpserve: options %s are required", strings.Join(missing, ", "))
	}
	if opts.MaxBodyBytes <= 0 {
		opts.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if opts.SessionTimeout == 0 {
		opts.SessionTimeout = 30 * time.Minute
	}
	opts.Version = cmp.Or(opts.Version, "dev")
	s := &Server{
		opts:      opts,
		log:       cmp.Or(opts.Logger, slog.Default()).With("component", "mcp"),
		bearer:    shared.NewBearer(opts.Token),
		resources: map[string]string{},
		prompts:   map[string]string{},
		templates: map[string]string{},
	}
	s.follows.init()
	caps := &mcp.ServerCapabilities{
		Tools:     &mcp.ToolCapabilities{ListChanged: true},
		Resources: &mcp.ResourceCapabilities{ListChanged: true},
		Prompts:   &mcp.PromptCapabilities{ListChanged: true},
		//lint:ignore SA1019 clients may still set a log level; logging stays in the protocol through its deprecation window.
		Logging: &mcp.LoggingCapabilities{},
	}
	metaOpts := &mcp.ServerOptions{Capabilities: caps, Logger: s.log, Instructions: metaInstructions}
	directOpts := &mcp.ServerOptions{Capabilities: caps, Logger: s.log}
	if s.initSubscriptions() { // subscribe.go
		caps.Resources.Subscribe = true
		for _, o := range []*mcp.ServerOptions{metaOpts, directOpts} {
			o.SubscribeHandler, o.UnsubscribeHandler = s.subscribe, s.unsubscribe
		}
	}
	s.meta = mcp.NewServer(&mcp.Implementation{Name: ServerName, Title: "musterd (muster's view: meta-tools)", Version: opts.Version}, metaOpts)
	s.direct = mcp.NewServer(&mcp.Implementation{Name: ServerName, Title: "musterd (every tool natively)", Version: opts.Version}, directOpts)
	s.metrics = newMetrics(opts.Registerer, map[string]*mcp.Server{viewMuster: s.meta, viewDirect: s.direct})
	s.meta.AddSendingMiddleware(s.metrics.countListChanged(viewMuster))
	s.direct.AddSendingMiddleware(s.metrics.countListChanged(viewDirect))
	// A call of a name not listed still reaches Server.CallTool, which
	// answers for claimed names (unlisted.go).
	s.direct.AddReceivingMiddleware(s.answerUnlisted)

	s.coreTools = s.newCoreTools()
	for _, b := range s.coreTools {
		s.coreDefs = append(s.coreDefs, b.tool())
	}
	s.metaTools = s.newMetaTools()
	for _, b := range s.metaTools {
		s.meta.AddTool(b.tool(), s.builtinHandler(viewMuster, b))
	}
	s.current.Store(&exposed{routes: map[string]route{}})
	s.Refresh()
	return s, nil
}

const metaInstructions = "musterd serves the tools of the MCP servers it runs. list_tools lists them (x_… server tools, core_… tools, workflow_… workflows); describe_tool shows one's input schema; call_tool calls one by name with its arguments. /mcp/direct serves every tool natively."

// Views, as the metrics and logs name them.
const (
	viewMuster = "muster"
	viewDirect = "direct"
)

// Refresh recomputes the exposed set from the core tools, the Backend and
// the Providers, and brings both views in line with it: /mcp/direct adds
// and removes the tools (and both views the resources and prompts) that
// changed, which sends notifications/…/list_changed to every session (the
// go-sdk batches the changes of 10 ms into one). It reports whether
// anything changed. Safe for concurrent use; calls are serialized.
func (s *Server) Refresh() bool {
	s.refreshMu.Lock()
	defer s.refreshMu.Unlock()
	old := s.current.Load()
	next := s.compute(old)
	var removed []string
	var added []route
	if next != old {
		for name := range old.routes {
			if _, ok := next.routes[name]; !ok {
				removed = append(removed, name)
			}
		}
		slices.Sort(removed)
		for _, t := range next.tools {
			r := next.routes[t.Name]
			if o, ok := old.routes[t.Name]; !ok || !bytes.Equal(o.def, r.def) {
				added = append(added, r)
			}
		}
		// The routes first: a tool listed is a tool routed.
		s.current.Store(next)
	}
	for _, r := range added {
		if err := s.addDirect(r); err != nil {
			s.log.Warn("tool not served natively on /mcp/direct", "tool", r.tool.Name, "error", err)
		}
	}
	if len(removed) > 0 {
		s.direct.RemoveTools(removed...)
	}
	changed := len(added) > 0 || len(removed) > 0
	if s.opts.Backend != nil {
		changed = s.syncResources() || changed
		changed = s.syncPrompts() || changed
		changed = s.syncTemplates() || changed
	}
	if changed {
		s.log.Debug("exposed set changed", "tools", len(next.tools), "added", len(added), "removed", len(removed))
	}
	return changed
}

// compute builds the exposed set: core tools first, then the Backend's,
// then each Provider's; the first to expose a name keeps it. If every
// source offers the very tools it offered for old, old is returned as it
// is: a reconcile that changed no tool (most of them: each of a resync's,
// at a hundred a second) costs a comparison of pointers, not a new set of
// 100,000 routes. Otherwise a tool old holds already (the same pointer:
// sources keep a tool while it is unchanged, and never change one) keeps
// its encoding, so a Refresh encodes only what is new.
func (s *Server) compute(old *exposed) *exposed {
	offers := [][]*mcp.Tool{s.coreDefs}
	if s.opts.Backend != nil {
		offers = append(offers, s.opts.Backend.Tools())
	}
	for _, p := range s.opts.Providers {
		offers = append(offers, p.Tools())
	}
	if slices.EqualFunc(offers, old.offers, slices.Equal) {
		return old
	}
	next := &exposed{routes: map[string]route{}, offers: offers}
	add := func(t *mcp.Tool, r route) {
		if t == nil || t.Name == "" {
			return
		}
		if prev, dup := next.routes[t.Name]; dup {
			s.log.Warn("tool exposed twice: the first source keeps it", "tool", t.Name, "kept", prev.source, "skipped", r.source)
			return
		}
		var def []byte
		if o, ok := old.routes[t.Name]; ok && o.tool == t {
			def = o.def
		} else {
			var err error
			if def, err = json.Marshal(t); err != nil {
				s.log.Warn("tool skipped: its definition does not encode", "tool", t.Name, "error", redact.String(err.Error()))
				return
			}
		}
		r.tool, r.def = t, def
		next.routes[t.Name] = r
		next.tools = append(next.tools, t)
	}
	for i, b := range s.coreTools {
		add(offers[0][i], route{builtin: b, source: "core"})
	}
	rest := offers[1:]
	if s.opts.Backend != nil {
		for _, t := range rest[0] {
			add(t, route{callee: s.opts.Backend, source: "server"})
		}
		rest = rest[1:]
	}
	for i, p := range s.opts.Providers {
		for _, t := range rest[i] {
			add(t, route{callee: p, source: "provider"})
		}
	}
	slices.SortFunc(next.tools, func(a, b *mcp.Tool) int { return strings.Compare(a.Name, b.Name) })
	return next
}

// addDirect registers r's tool on /mcp/direct. The go-sdk panics on a tool
// whose input schema is not an object; a managed server's bad schema must
// not take the daemon down, so it is checked first and any panic left is
// turned into an error.
func (s *Server) addDirect(r route) (err error) {
	t := r.tool
	if !isObjectSchema(t.InputSchema) {
		// Still listed and callable through the meta-tools.
		raw, _ := json.Marshal(t.InputSchema)
		return fmt.Errorf("its input schema is not a JSON Schema of type object: %.200s", raw)
	}
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("rejected by the go-sdk: %v", p)
		}
	}()
	if r.builtin != nil {
		s.direct.AddTool(t, s.builtinHandler(viewDirect, r.builtin))
	} else {
		s.direct.AddTool(t, s.forwardHandler(t.Name))
	}
	return nil
}

// isObjectSchema reports whether schema is a JSON Schema of type object,
// without encoding the forms sources use (an encoded schema, or a map as
// a client decodes one).
func isObjectSchema(schema any) bool {
	var typed struct {
		Type any `json:"type"`
	}
	switch v := schema.(type) {
	case nil:
		return false
	case map[string]any:
		return v["type"] == "object"
	case json.RawMessage:
		return json.Unmarshal(v, &typed) == nil && typed.Type == "object"
	}
	raw, err := json.Marshal(schema)
	return err == nil && json.Unmarshal(raw, &typed) == nil && typed.Type == "object"
}

// Tools returns the exposed set: every core, server and provider tool,
// sorted by name.
func (s *Server) Tools() []*mcp.Tool {
	return slices.Clone(s.current.Load().tools)
}

// ErrUnknownTool is matched (errors.Is) by CallTool's error for a name not
// exposed.
var ErrUnknownTool = errors.New("unknown tool")

// CallTool calls the exposed tool name, whoever serves it: a core tool,
// a running server's tool (x_…) or a provider's (workflow_…). It is the
// router workflow steps call tools through. An error means the call could
// not be made; a failure of the tool is a result with IsError, and so are
// arguments a core tool does not accept.
func (s *Server) CallTool(ctx context.Context, name string, args map[string]any, progress func(*mcp.ProgressNotificationParams)) (*mcp.CallToolResult, error) {
	r, ok := s.current.Load().routes[name]
	if !ok {
		if r, ok = s.claimed(name); !ok { // claim.go
			return nil, unknownTool(name) // unlisted.go
		}
	}
	if args == nil {
		args = map[string]any{}
	}
	info := callInfoFrom(ctx)
	if info.correlationID == "" {
		info.correlationID = events.NewCorrelationID()
		ctx = withCallInfo(ctx, info)
	}
	// Redacting the arguments costs regular expressions: only when the
	// line is written.
	debug := s.log.Enabled(ctx, slog.LevelDebug)
	start := time.Now()
	if debug {
		s.log.DebugContext(ctx, "MCP tool call", "tool", name, "source", r.source, "view", info.view, "session", info.session,
			"correlation_id", info.correlationID, "arguments", redact.ArgsJSON(args))
	}
	var (
		res *mcp.CallToolResult
		err error
	)
	if r.builtin != nil {
		res, err = s.callBuiltin(ctx, r.builtin, args)
	} else {
		res, err = r.callee.CallTool(ctx, name, args, progress)
	}
	outcome := "ok"
	switch {
	case err != nil:
		outcome = "error"
	case res == nil:
		res, outcome = textResult(""), "ok"
	case res.IsError:
		outcome = "tool_error"
	}
	if debug {
		attrs := []any{"tool", name, "correlation_id", info.correlationID, "result", outcome, "duration", time.Since(start)}
		if err != nil {
			attrs = append(attrs, "error", redact.String(err.Error()))
		}
		s.log.DebugContext(ctx, "MCP tool call done", attrs...)
	}
	return res, err
}

// callBuiltin checks args against b's declaration and calls it.
func (s *Server) callBuiltin(ctx context.Context, b *builtin, raw map[string]any) (*mcp.CallToolResult, error) {
	a, err := b.check(raw)
	if err != nil {
		return errorResult(err.Error()), nil
	}
	return b.call(ctx, a)
}

// builtinHandler serves a meta-tool or core tool on view.
func (s *Server) builtinHandler(view string, b *builtin) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		args, errRes := decodeArguments(req)
		if errRes != nil {
			return errRes, nil
		}
		ctx, done := s.enter(ctx, view, req)
		defer done()
		p := progressOf(ctx, req)
		if p != nil {
			ctx = context.WithValue(ctx, progressKey{}, p)
		}
		if b.isMeta {
			// Meta-tools are not exposed tools: they are logged, not routed.
			if s.log.Enabled(ctx, slog.LevelDebug) {
				s.log.DebugContext(ctx, "MCP meta-tool call", "tool", b.name, "session", req.Session.ID(), "correlation_id", callInfoFrom(ctx).correlationID, "arguments", redact.ArgsJSON(args))
			}
			return s.callBuiltin(ctx, b, args)
		}
		return s.CallTool(ctx, b.name, args, p)
	}
}

// forwardHandler serves a server's or provider's tool on /mcp/direct.
func (s *Server) forwardHandler(name string) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		args, errRes := decodeArguments(req)
		if errRes != nil {
			return errRes, nil
		}
		ctx, done := s.enter(ctx, viewDirect, req)
		defer done()
		res, err := s.CallTool(ctx, name, args, progressOf(ctx, req))
		if err != nil {
			return errorResult(redact.String(err.Error())), nil
		}
		return res, nil
	}
}

// ErrSessionClosed is the cause of a call's context cancelled because the
// client closed its session under it.
var ErrSessionClosed = errors.New("the client's MCP session closed")

// enter notes the call's view, session and a new correlation ID in ctx,
// and ties the call to its session. The go-sdk neither cancels a call when
// its client closes the session nor closes the session before its calls
// end (a DELETE waits for them): a call whose client went away is
// cancelled here instead, its cancellation forwarded to the server, and
// the session closes at once. done must be called when the call returns.
func (s *Server) enter(ctx context.Context, view string, req *mcp.CallToolRequest) (_ context.Context, done func()) {
	info := callInfo{view: view, correlationID: events.NewCorrelationID()}
	ctx, cancel := context.WithCancelCause(ctx)
	stop := func() bool { return false }
	if req.Session != nil {
		info.session = req.Session.ID()
		info.serverSession = req.Session
		// Registered on the session's context, not a goroutine per call:
		// the call path stays on the go-sdk's goroutines.
		stop = context.AfterFunc(s.sessionClosed(req.Session), func() { cancel(ErrSessionClosed) })
	}
	return withCallInfo(ctx, info), func() { stop(); cancel(nil) }
}

// watch is a context cancelled when its session closes, or is being
// closed.
type watch struct {
	ctx   context.Context
	close context.CancelFunc
}

// sessionClosed returns a context cancelled once ss closes or a client
// asks to close it; one watch per session that has had a call.
func (s *Server) sessionClosed(ss *mcp.ServerSession) context.Context {
	if w, ok := s.watches.Load(ss); ok {
		return w.(*watch).ctx
	}
	ctx, cancel := context.WithCancel(context.Background())
	nw := &watch{ctx: ctx, close: cancel}
	w, loaded := s.watches.LoadOrStore(ss, nw)
	if loaded {
		cancel()
	} else {
		id := ss.ID() // "" for SSE sessions, which a DELETE cannot name
		if id != "" {
			s.watchIDs.Store(id, nw)
		}
		go func() {
			_ = ss.Wait()
			nw.close()
			s.watches.Delete(ss)
			if id != "" {
				s.watchIDs.CompareAndDelete(id, nw)
			}
		}()
	}
	return w.(*watch).ctx
}

// closing cancels the calls of the streamable session id, which a client
// asked to close (a DELETE), before the go-sdk closes it.
func (s *Server) closing(id string) {
	if w, ok := s.watchIDs.Load(id); ok {
		w.(*watch).close()
	}
}

// decodeArguments returns a call's arguments, or the tool error saying
// they are not a JSON object.
func decodeArguments(req *mcp.CallToolRequest) (map[string]any, *mcp.CallToolResult) {
	raw := req.Params.Arguments
	args := map[string]any{}
	if len(raw) == 0 || string(raw) == "null" {
		return args, nil
	}
	if err := json.Unmarshal(raw, &args); err != nil {
		return nil, errorResult(fmt.Sprintf("%s: arguments must be a JSON object: %v", req.Params.Name, err))
	}
	return args, nil
}

// progressOf forwards a callee's progress to the calling client under the
// client's progress token; nil when the client asked for none.
func progressOf(ctx context.Context, req *mcp.CallToolRequest) func(*mcp.ProgressNotificationParams) {
	token := req.Params.GetProgressToken()
	if token == nil || req.Session == nil {
		return nil
	}
	return func(p *mcp.ProgressNotificationParams) {
		if p == nil {
			return
		}
		out := *p
		out.ProgressToken = token
		_ = req.Session.NotifyProgress(context.WithoutCancel(ctx), &out)
	}
}

// callInfo is what a call carries through its context.
type callInfo struct {
	view, session, correlationID string
	serverSession                *mcp.ServerSession
}

type callInfoKey struct{}

func withCallInfo(ctx context.Context, info callInfo) context.Context {
	return context.WithValue(ctx, callInfoKey{}, info)
}

func callInfoFrom(ctx context.Context) callInfo {
	info, _ := ctx.Value(callInfoKey{}).(callInfo)
	return info
}

// CorrelationID returns the correlation ID of the MCP call ctx belongs to,
// or "" outside one: a callee may log it beside its own records.
func CorrelationID(ctx context.Context) string { return callInfoFrom(ctx).correlationID }

// textResult is a successful result of one text item.
func textResult(text string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}}
}

// errorResult is a failed result of one text item.
func errorResult(text string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}, IsError: true}
}

// jsonResult is a successful result of v as one text item of compact
// JSON, as muster's core tools answer.
func jsonResult(v any) (*mcp.CallToolResult, error) {
	data, err := marshal(v, false)
	if err != nil {
		return nil, err
	}
	return textResult(string(data)), nil
}

// marshal encodes v without escaping HTML (URLs keep their &), indented
// or not.
func marshal(v any, indent bool) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if indent {
		enc.SetIndent("", "  ")
	}
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}
