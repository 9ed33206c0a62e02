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
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/musterd/musterd/pkg/api/shared"
	"github.com/musterd/musterd/pkg/events"
	"github.com/musterd/musterd/pkg/identity"
	"github.com/musterd/musterd/pkg/peer"
	"github.com/musterd/musterd/pkg/redact"
	"github.com/musterd/musterd/pkg/router"
	"github.com/musterd/musterd/pkg/tooldef"
)

// ServerName is the endpoint's implementation name, muster's, which
// muster's clients show.
const ServerName = "muster-aggregator"

// DefaultMaxBodyBytes bounds a request's body when Options.MaxBodyBytes is
// zero: the go-sdk's own default.
const DefaultMaxBodyBytes = mcp.DefaultMaxRequestBodyBytes

// Options configure the endpoint. Backend is required; every other field
// has the default its comment names.
type Options struct {
	// Backend is where every exposed tool is listed and called, and the
	// running servers' resources and prompts are read: the router, over
	// the core tools, the managed servers and the workflows. Required.
	Backend Backend
	// Leader reports, under leader election, whether this replica leads
	// and, when not, the leader's identity. A follower runs no server, so it
	// answers every MCP request with an error naming the leader. Default:
	// this replica always leads.
	Leader func() (identity string, leading bool)
	// Token, when not empty, is the bearer token every MCP request must
	// carry (shared.Bearer checks it, as it does the API's).
	Token string
	// Authenticator, when set, says who each request comes from instead
	// of Token: musterd's OAuth (package oauth/verify). The caller it
	// names is the identity of the request's calls (package identity), and
	// a session is bound to its user: another user's request on it is
	// refused. Default: Token's check.
	Authenticator identity.Authenticator
	// OnOwnerGone is told of an owner (identity's Owner) whose last
	// session closed, so that what was kept for it (its own connections
	// to servers, its tools) can go. Called on a goroutine of its own, once
	// per time an owner's sessions all closed. Default: nothing.
	OnOwnerGone func(owner string)
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

// Server is the MCP endpoint: two views of the exposed tools the Backend
// lists, each an mcp.Server of the go-sdk. Make it with New, serve
// Handler, and call Refresh whenever what the Backend offers may have
// changed.
type Server struct {
	opts Options
	log  *slog.Logger
	auth identity.Authenticator

	// meta is muster's view (/mcp, /sse): the eleven meta-tools.
	meta *mcp.Server
	// direct is /mcp/direct: every exposed tool natively.
	direct *mcp.Server

	metaTools []*tooldef.Tool

	metrics *metrics

	// listed is the exposed set as the last Refresh read it, which the
	// meta-tools list and describe.
	listed atomic.Pointer[listing]

	// refreshMu serializes Refresh, and guards what follows.
	refreshMu sync.Mutex
	onDirect  map[string]registered // name → the tool registered on /mcp/direct
	resources map[string]string     // URI → JSON of the resource registered
	prompts   map[string]string     // name → JSON of the prompt registered
	templates map[string]string     // URI template → JSON of the template registered

	streams streams     // events.go
	servers serverViews // serverview.go
	sse     sseSessions // sse.go
	// subs forwards resource subscriptions (subscribe.go); nil when the
	// Backend cannot.
	subs *resourceSubs

	// watches maps each *mcp.ServerSession that has had a call to its
	// *watch, and watchIDs a streamable session's ID to the same.
	watches, watchIDs sync.Map
	states            *sealer  // the request states of input-required results (requeststate.go)
	clients           sync.Map // *mcp.ServerSession → *client (peer.go)

	// owners are the sessions of each owner, for ToolsChangedFor
	// (owners.go).
	owners ownerSessions
}

// listing is the exposed set as a Refresh read it.
type listing struct {
	tools []*mcp.Tool // sorted by name
	has   map[string]bool
}

// registered is a tool registered on /mcp/direct, with the JSON of its
// definition, to tell a changed definition from the same.
type registered struct {
	tool *mcp.Tool
	def  []byte
}

// New returns the endpoint, with the exposed set as the Backend offers it
// now.
func New(opts Options) (*Server, error) {
	if opts.Backend == nil {
		return nil, errors.New("mcpserve: Options.Backend is required")
	}
	if opts.MaxBodyBytes <= 0 {
		opts.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if opts.SessionTimeout == 0 {
		opts.SessionTimeout = 30 * time.Minute
	}
	opts.Version = cmp.Or(opts.Version, "dev")
	s := &Server{
		states:    newSealer(),
		opts:      opts,
		log:       cmp.Or(opts.Logger, slog.Default()).With("component", "mcp"),
		auth:      opts.Authenticator,
		onDirect:  map[string]registered{},
		resources: map[string]string{},
		prompts:   map[string]string{},
		templates: map[string]string{},
	}
	if s.auth == nil {
		s.auth = shared.NewBearer(opts.Token)
	}
	s.owners.gone = opts.OnOwnerGone
	s.streams.init()
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
	if h := s.completionHandler(); h != nil { // complete.go
		metaOpts.CompletionHandler, directOpts.CompletionHandler = h, h
	}
	s.meta = mcp.NewServer(&mcp.Implementation{Name: ServerName, Title: "musterd (muster's view: meta-tools)", Version: opts.Version}, metaOpts)
	s.direct = mcp.NewServer(&mcp.Implementation{Name: ServerName, Title: "musterd (every tool natively)", Version: opts.Version}, directOpts)
	s.metrics = newMetrics(opts.Registerer, map[string]*mcp.Server{viewMuster: s.meta, viewDirect: s.direct})
	s.meta.AddSendingMiddleware(s.metrics.countListChanged(viewMuster))
	s.direct.AddSendingMiddleware(s.metrics.countListChanged(viewDirect))
	// A call of a name not listed still reaches the Backend, which
	// answers for claimed names (unlisted.go).
	s.direct.AddReceivingMiddleware(s.answerUnlisted)
	// A caller with tools of its own lists them (ownlist.go).
	s.direct.AddReceivingMiddleware(s.listOwnTools)
	s.meta.AddReceivingMiddleware(s.trackClients) // peer.go
	s.direct.AddReceivingMiddleware(s.trackClients)

	s.metaTools = s.newMetaTools()
	for _, t := range s.metaTools {
		s.meta.AddTool(t.Definition(), s.metaHandler(t))
	}
	s.listed.Store(&listing{has: map[string]bool{}})
	s.Refresh()
	return s, nil
}

const metaInstructions = "musterd serves the tools of the MCP servers it runs. list_tools lists them (x_… server tools, core_… tools, workflow_… workflows); describe_tool shows one's input schema; call_tool calls one by name with its arguments. /mcp/direct serves every tool natively."

// Views, as the metrics and logs name them.
const (
	viewMuster = "muster"
	viewDirect = "direct"
	viewServer = "server" // /mcp/servers/<name>
)

// Refresh reads the exposed set from the Backend and brings both views in
// line with it: /mcp/direct adds and removes the tools (and both views the
// resources and prompts) that changed, which sends
// notifications/…/list_changed to every session (the go-sdk batches the
// changes of 10 ms into one). It reports whether anything changed. Safe
// for concurrent use; calls are serialized.
func (s *Server) Refresh() bool {
	s.refreshMu.Lock()
	defer s.refreshMu.Unlock()
	tools := s.opts.Backend.Tools()
	var removed []string
	var added []registered
	if prev := s.listed.Load().tools; sameSlice(prev, tools) {
		// The Backend offers the very set it did (the router returns its
		// set as it is while no source's offer changed): most Refreshes,
		// one per change of resources or prompts, cost no walk of 100,000
		// tools. The views of one server follow their servers' resources
		// and prompts all the same.
		changed := s.syncFeatures(len(tools), 0, 0)
		s.servers.refresh(s) // serverview.go
		return changed
	}
	seen := make(map[string]bool, len(tools))
	for _, t := range tools {
		seen[t.Name] = true
		old, ok := s.onDirect[t.Name]
		if ok && old.tool == t {
			continue // the same pointer: unchanged (the Backend never changes a tool it listed)
		}
		def, err := json.Marshal(t)
		if err != nil {
			s.log.Warn("tool not served natively on /mcp/direct: its definition does not encode", "tool", t.Name, "error", redact.String(err.Error()))
			continue
		}
		r := registered{tool: t, def: def}
		s.onDirect[t.Name] = r
		if !ok || !bytes.Equal(old.def, def) {
			added = append(added, r)
		}
	}
	for name := range s.onDirect {
		if !seen[name] {
			removed = append(removed, name)
			delete(s.onDirect, name)
		}
	}
	slices.Sort(removed)
	s.listed.Store(&listing{tools: tools, has: seen})
	for _, r := range added {
		if err := s.addDirect(r.tool); err != nil {
			s.log.Warn("tool not served natively on /mcp/direct", "tool", r.tool.Name, "error", err)
		}
	}
	if len(removed) > 0 {
		s.direct.RemoveTools(removed...)
	}
	changed := s.syncFeatures(len(tools), len(added), len(removed))
	s.servers.refresh(s) // serverview.go
	return changed
}

// syncFeatures brings both views' resources, prompts and templates in line
// after a Refresh that added and removed tools, and reports whether
// anything changed.
func (s *Server) syncFeatures(tools, added, removed int) bool {
	changed := added > 0 || removed > 0
	changed = s.syncResources() || changed
	changed = s.syncPrompts() || changed
	changed = s.syncTemplates() || changed
	if changed {
		s.log.Debug("exposed set changed", "tools", tools, "added", added, "removed", removed)
	}
	return changed
}

// sameSlice reports whether a and b are the same slice: the same length
// over the same array.
func sameSlice[T any](a, b []T) bool {
	return len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0])
}

// addDirect registers t on /mcp/direct. The go-sdk panics on a tool whose
// input schema is not an object; a managed server's bad schema must not
// take the daemon down, so it is checked first and any panic left is
// turned into an error.
func (s *Server) addDirect(t *mcp.Tool) (err error) {
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
	s.direct.AddTool(t, s.forwardHandler(t.Name))
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

// Tools returns the exposed set as the last Refresh read it, sorted by
// name.
func (s *Server) Tools() []*mcp.Tool {
	return slices.Clone(s.listed.Load().tools)
}

// ErrUnknownTool is matched (errors.Is) by the error of a call of a name
// the Backend neither exposes nor claims.
var ErrUnknownTool = router.ErrUnknownTool

// metaHandler serves a meta-tool on muster's view. Meta-tools are not
// exposed tools: they are logged here, not routed.
func (s *Server) metaHandler(t *tooldef.Tool) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		args, errRes := decodeArguments(req)
		if errRes != nil {
			return errRes, nil
		}
		ctx, done := s.enter(ctx, viewMuster, req)
		defer done()
		if p := progressOf(ctx, req); p != nil {
			ctx = context.WithValue(ctx, progressKey{}, p)
		}
		if s.log.Enabled(ctx, slog.LevelDebug) {
			c, _ := router.CallerOf(ctx)
			s.log.DebugContext(ctx, "MCP meta-tool call", "tool", t.Name, "session", c.Session, "correlation_id", c.CorrelationID, "arguments", redact.ArgsJSON(args))
		}
		return t.Invoke(ctx, args)
	}
}

// forwardHandler serves an exposed tool on /mcp/direct, through the
// Backend.
func (s *Server) forwardHandler(name string) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		res, err := s.forward(ctx, name, req)
		if err != nil {
			if own, ok := err.(*jsonrpc.Error); ok {
				return nil, own // musterd's own answer to the request (a request state refused)
			}
			if mustStayAnError(err) { // rpcerror.go
				return nil, serverError(err)
			}
			return tooldef.Error(redact.String(err.Error())), nil
		}
		return res, nil
	}
}

// forward hands a /mcp/direct call of name to the Backend, its arguments
// decoded and its caller in ctx.
func (s *Server) forward(ctx context.Context, name string, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	args, errRes := decodeArguments(req)
	if errRes != nil {
		return errRes, nil
	}
	ctx, done := s.enter(ctx, viewDirect, req)
	defer done()
	ctx, err := s.retryRound(ctx, toolCall(viewDirect, req), req.Params.InputResponses, req.Params.RequestState) // requeststate.go
	if err != nil {
		return nil, err
	}
	res, err := s.opts.Backend.CallTool(ctx, name, args, progressOf(ctx, req))
	return s.sealRound(res, viewDirect, req), err
}

// ErrSessionClosed is the cause of a call's context cancelled because the
// client closed its session under it.
var ErrSessionClosed = errors.New("the client's MCP session closed")

// enter notes the call's caller (view, session, a new correlation ID, and
// how to notify the session: router.Caller) in ctx, and ties the call to
// its session. The go-sdk neither cancels a call when its client closes
// the session nor closes the session before its calls end (a DELETE waits
// for them): a call whose client went away is cancelled here instead, its
// cancellation forwarded to the server, and the session closes at once.
// done must be called when the call returns.
func (s *Server) enter(ctx context.Context, view string, req *mcp.CallToolRequest) (_ context.Context, done func()) {
	c := router.Caller{View: view, CorrelationID: events.NewCorrelationID()}
	ctx, cancel := context.WithCancelCause(ctx)
	stop := func() bool { return false }
	if ss := req.Session; ss != nil {
		c.Session = ss.ID()
		key := c.Session
		if key == "" {
			key = s.sseKey(ss) // sse.go
		}
		if key != "" {
			ctx = withSession(ctx, key)
			id, _ := identity.From(ctx)
			s.owners.note(key, id.Owner(), s.sessionClosed(ss)) // owners.go
		}
		closed := s.sessionClosed(ss)
		c.Done = closed.Done()
		if key != "" {
			c.Notify = s.notifier(key) // events.go
		}
		// Registered on the session's context, not a goroutine per call:
		// the call path stays on the go-sdk's goroutines.
		stop = context.AfterFunc(closed, func() { cancel(ErrSessionClosed) })
		// What a server asks of its client while it handles the call goes
		// to this client, on this call's stream (peer.go). A request of
		// the newest generation has no session to bind (generations.go).
		switch {
		case !newGenerationSession(ss):
			ctx = peer.With(ctx, boundClient{client: s.clientOf(ss), call: ctx})
		case view != viewMuster:
			// It takes a server's input-required results itself, and calls
			// again with its answers (requeststate.go).
			ctx = peer.WithRelay(ctx, req.ClientCapabilities())
		default:
			// Not through a meta-tool: call_tool, get_prompt and
			// get_resource wrap the result in their own, which an
			// input-required result cannot travel in, and take no answers
			// back. The server's questions are refused, saying so.
			ctx = peer.WithoutRelay(peer.WithRelay(ctx, req.ClientCapabilities()))
		}
	}
	return router.WithCaller(ctx, c), func() { stop(); cancel(nil) }
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
		return nil, tooldef.Error(fmt.Sprintf("%s: arguments must be a JSON object: %v", req.Params.Name, err))
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

// withSession is ctx with its caller's identity naming the session key:
// without a user, the session owns what its client logs in to (package
// identity).
func withSession(ctx context.Context, key string) context.Context {
	id, _ := identity.From(ctx)
	if id.Session == "" {
		id.Session = key
	}
	return identity.With(ctx, id)
}

// withCaller is ctx with the identity of the request's caller on ss, for
// the requests that are no tool call (a resource read).
func (s *Server) withCaller(ctx context.Context, ss *mcp.ServerSession) context.Context {
	if ss == nil {
		return ctx
	}
	key := ss.ID()
	if key == "" {
		key = s.sseKey(ss)
	}
	if key == "" {
		return ctx
	}
	return withSession(ctx, key)
}
