package mcpserve

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/musterd/musterd/pkg/apis/muster/v1alpha1"
	"github.com/musterd/musterd/pkg/events"
	"github.com/musterd/musterd/pkg/identity"
	"github.com/musterd/musterd/pkg/redact"
	"github.com/musterd/musterd/pkg/router"
)

// PathServers prefixes the views of one server each:
// /mcp/servers/<name> (a server of the default namespace) or
// /mcp/servers/<namespace>/<name>.
const PathServers = "/mcp/servers/"

// Codes of the views of one server's answers about the server.
const (
	codeServerNotDeclared = -32005
	codeServerDown        = -32006
)

// ServerBackend is what the views of one server need: the server as it
// offers itself, and the calls into it by its own names. *router.Router is
// one; a Backend that is not has no such views (404).
type ServerBackend interface {
	Server(key events.Key) (router.ServerOffer, error)
	CallServerTool(ctx context.Context, key events.Key, name string, args map[string]any, progress func(*mcp.ProgressNotificationParams)) (*mcp.CallToolResult, error)
	ReadServerResource(ctx context.Context, key events.Key, uri string) (*mcp.ReadResourceResult, error)
	GetServerPrompt(ctx context.Context, key events.Key, name string, args map[string]string) (*mcp.GetPromptResult, error)
	CompleteServer(ctx context.Context, key events.Key, params *mcp.CompleteParams) (*mcp.CompleteResult, error)
}

// serverViews are the views of one server that have been asked for: one
// mcp.Server each, made at the first request and kept current by Refresh.
// A user with a connection of their own to a server (a login to a
// protected server, single sign-on) has a view of their own of it, served
// from that connection, which no other caller's request reaches.
type serverViews struct {
	mu    sync.Mutex
	views map[viewKey]*serverView
}

// viewKey names a view: its server's, and the user's whose connection it
// serves ("" for the server's own view).
type viewKey struct {
	key   events.Key
	owner string
}

// PersonalServers is a ServerBackend that serves a user's own connection
// to a server as that user's view of it (*router.Router is one).
type PersonalServers interface {
	// ServerOf is the server as it offers itself on owner's own
	// connection; ok is false when owner has none.
	ServerOf(key events.Key, owner string) (offer router.ServerOffer, ok bool)
}

// serverView is one server served alone, under its own names.
type serverView struct {
	key     events.Key
	init    *mcp.InitializeResult // what its mcp.Server was made from
	srv     *mcp.Server
	handler http.Handler // stateful: the older generation's sessions
	newGen  http.Handler // stateless: the newest generation's requests

	mu sync.Mutex // guards what follows: what is registered on srv
	// tools, resourceList, templateList and promptList are the offer's
	// slices last brought in: the same slices again are no change, and
	// cost no walk (a request brings its view in line first).
	tools                         []*mcp.Tool
	resourceList                  []*mcp.Resource
	templateList                  []*mcp.ResourceTemplate
	promptList                    []*mcp.Prompt
	registered                    map[string]*mcp.Tool
	resources, templates, prompts map[string]string // URI, template or name → its JSON
}

// serverKey reads the server a path of PathServers names.
func serverKey(path string) (events.Key, bool) {
	rest := strings.Trim(strings.TrimPrefix(path, PathServers), "/")
	namespace, name, qualified := strings.Cut(rest, "/")
	if !qualified {
		namespace, name = events.DefaultNamespace, rest
	}
	if name == "" || namespace == "" || strings.Contains(name, "/") {
		return events.Key{}, false
	}
	return events.NewKey(v1alpha1.KindMCPServer, namespace, name), true
}

// serveServerView serves the view of the server the path names. A caller
// with a connection of its own to the server gets its own view, served
// from that connection. A server no definition declares is a 404 (its
// views, if it had any, are dropped with their sessions), one that does
// not run a 503 naming its state, for a request that opens a session; the
// requests of a session open already, and those of the newest generation
// (which has no sessions) once the view has been asked for, reach its
// view whatever the running server's state, so that a call waits through
// a restart, as on the other views.
func (s *Server) serveServerView() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sb, ok := s.opts.Backend.(ServerBackend)
		key, named := serverKey(r.URL.Path)
		if !ok || !named {
			writeRPCError(w, http.StatusNotFound, codeServerNotDeclared, "no MCP server is named by "+r.URL.Path+": use "+PathServers+"<name> or "+PathServers+"<namespace>/<name>")
			return
		}
		offer, err := sb.Server(key)
		if errors.Is(err, router.ErrServerNotDeclared) {
			// Its definition is gone: so are its views, sessions and all.
			s.servers.drop(key)
		}
		if ps, personal := sb.(PersonalServers); personal && !errors.Is(err, router.ErrServerNotDeclared) {
			if id, signedIn := identity.From(r.Context()); signedIn {
				if mine, own := ps.ServerOf(key, id.Owner()); own {
					s.servers.current(s, sb, viewKey{key, id.Owner()}, mine).serve(s, w, r)
					return
				}
			}
		}
		shared := viewKey{key: key}
		if v := s.servers.get(shared); v != nil && (r.Header.Get(sessionHeader) != "" || newGeneration(r)) {
			if err == nil {
				v = s.servers.current(s, sb, shared, offer)
			}
			v.serve(s, w, r)
			return
		}
		switch {
		case errors.Is(err, router.ErrServerNotDeclared):
			writeRPCError(w, http.StatusNotFound, codeServerNotDeclared, redact.String(err.Error()))
			return
		case err != nil:
			writeRPCError(w, http.StatusServiceUnavailable, codeServerDown, redact.String(err.Error()))
			return
		}
		s.servers.current(s, sb, shared, offer).serve(s, w, r)
	})
}

// serve answers r on v, in r's generation (generations.go).
func (v *serverView) serve(s *Server, w http.ResponseWriter, r *http.Request) {
	generations(s.streamable(v.handler), v.newGen).ServeHTTP(w, r)
}

// drop forgets key's views, the server's and its users', and closes
// their sessions.
func (sv *serverViews) drop(key events.Key) {
	sv.mu.Lock()
	var gone []*serverView
	for vk, v := range sv.views {
		if vk.key == key {
			gone = append(gone, v)
			delete(sv.views, vk)
		}
	}
	sv.mu.Unlock()
	for _, v := range gone {
		v.close()
	}
}

// dropView forgets the view vk and closes its sessions.
func (sv *serverViews) dropView(vk viewKey) {
	sv.mu.Lock()
	v := sv.views[vk]
	delete(sv.views, vk)
	sv.mu.Unlock()
	if v != nil {
		v.close()
	}
}

// close closes v's sessions.
func (v *serverView) close() {
	for ss := range v.srv.Sessions() {
		_ = ss.Close()
	}
}

func (sv *serverViews) get(vk viewKey) *serverView {
	sv.mu.Lock()
	defer sv.mu.Unlock()
	return sv.views[vk]
}

// current returns the view vk of offer's server, made now if there is
// none, made anew (its sessions closed: they re-initialize) if the server
// answered initialize otherwise since, and brought in line with offer.
func (sv *serverViews) current(s *Server, sb ServerBackend, vk viewKey, offer router.ServerOffer) *serverView {
	sv.mu.Lock()
	v := sv.views[vk]
	if v == nil || !sameInit(v.init, offer.Init) {
		old := v
		v = s.newServerView(sb, offer)
		if sv.views == nil {
			sv.views = map[viewKey]*serverView{}
		}
		sv.views[vk] = v
		if old != nil {
			old.close()
		}
	}
	sv.mu.Unlock()
	v.sync(s, sb, offer)
	return v
}

// refresh brings every view asked for in line with its server, so that
// its sessions hear list_changed as the other views' do; a user's view
// whose connection is gone is dropped, its sessions closed.
func (sv *serverViews) refresh(s *Server) { sv.refreshWhere(s, func(viewKey) bool { return true }) }

// refreshOwner is refresh of owner's own views.
func (sv *serverViews) refreshOwner(s *Server, owner string) {
	sv.refreshWhere(s, func(vk viewKey) bool { return vk.owner == owner })
}

func (sv *serverViews) refreshWhere(s *Server, which func(viewKey) bool) {
	sb, ok := s.opts.Backend.(ServerBackend)
	if !ok {
		return
	}
	ps, _ := sb.(PersonalServers)
	sv.mu.Lock()
	keys := make([]viewKey, 0, len(sv.views))
	for vk := range sv.views {
		if which(vk) {
			keys = append(keys, vk)
		}
	}
	sv.mu.Unlock()
	for _, vk := range keys {
		if vk.owner == "" {
			if offer, err := sb.Server(vk.key); err == nil {
				sv.current(s, sb, vk, offer)
			}
			continue
		}
		if ps == nil {
			continue
		}
		if offer, own := ps.ServerOf(vk.key, vk.owner); own {
			sv.current(s, sb, vk, offer)
		} else {
			sv.dropView(vk)
		}
	}
}

// sameInit reports whether two initialize answers made the same view: the
// same serverInfo, capabilities and instructions.
func sameInit(a, b *mcp.InitializeResult) bool {
	if a == b {
		return true
	}
	if a == nil || b == nil {
		return false
	}
	ja, _ := json.Marshal(struct {
		I any
		C any
		S string
	}{a.ServerInfo, a.Capabilities, a.Instructions})
	jb, _ := json.Marshal(struct {
		I any
		C any
		S string
	}{b.ServerInfo, b.Capabilities, b.Instructions})
	return string(ja) == string(jb)
}

// newServerView makes the mcp.Server of offer's server: its serverInfo,
// its capabilities and its instructions; completion/complete goes to the
// server when it offers completions, and resources/subscribe and
// unsubscribe when it offers subscriptions (the Backend a
// ServerSubscriber: else the view offers none).
func (s *Server) newServerView(sb ServerBackend, offer router.ServerOffer) *serverView {
	init := offer.Init
	info := &mcp.Implementation{Name: offer.Key.Name}
	var caps *mcp.ServerCapabilities
	instructions := ""
	if init != nil {
		if init.ServerInfo != nil {
			copied := *init.ServerInfo
			info = &copied
		}
		if init.Capabilities != nil {
			copied := *init.Capabilities
			caps = &copied
			if caps.Resources != nil && (s.subs == nil || s.subs.sb == nil) {
				r := *caps.Resources
				r.Subscribe = false
				caps.Resources = &r
			}
		}
		instructions = init.Instructions
	}
	opts := &mcp.ServerOptions{Capabilities: caps, Instructions: instructions, Logger: s.log}
	if caps != nil && caps.Completions != nil {
		key := offer.Key
		opts.CompletionHandler = func(ctx context.Context, req *mcp.CompleteRequest) (*mcp.CompleteResult, error) {
			return sb.CompleteServer(ctx, key, req.Params)
		}
	}
	if caps != nil && caps.Resources != nil && caps.Resources.Subscribe {
		opts.SubscribeHandler, opts.UnsubscribeHandler = s.serverSubscribe(offer.Key) // subscribe.go
	}
	srv := mcp.NewServer(info, opts)
	srv.AddReceivingMiddleware(s.trackClients) // peer.go
	o := &mcp.StreamableHTTPOptions{MaxRequestBodyBytes: s.opts.MaxBodyBytes, Logger: s.log}
	if s.opts.SessionTimeout > 0 {
		o.SessionTimeout = s.opts.SessionTimeout
	}
	return &serverView{
		key: offer.Key, init: init, srv: srv,
		handler:    mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, o),
		newGen:     mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, s.statelessOpts()),
		registered: map[string]*mcp.Tool{},
		resources:  map[string]string{}, templates: map[string]string{}, prompts: map[string]string{},
	}
}

// sync registers on v's server what offer holds that it does not, and
// removes what offer no longer holds: the go-sdk sends list_changed.
func (v *serverView) sync(s *Server, sb ServerBackend, offer router.ServerOffer) {
	v.mu.Lock()
	defer v.mu.Unlock()
	view := viewServer + ":" + v.key.String() // a request state is good on the view it was issued on
	if !sameSlice(v.tools, offer.Tools) {
		v.tools = offer.Tools
		seen := map[string]bool{}
		for _, t := range offer.Tools {
			seen[t.Name] = true
			if v.registered[t.Name] == t {
				continue
			}
			if !isObjectSchema(t.InputSchema) {
				s.log.Warn("tool not served on its server's view: its input schema is not of type object", "server", v.key.String(), "tool", t.Name)
				continue
			}
			name := t.Name
			v.srv.AddTool(t, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				args, errRes := decodeArguments(req)
				if errRes != nil {
					return errRes, nil
				}
				ctx, done := s.enter(ctx, viewServer, req)
				defer done()
				ctx, err := s.retryRound(ctx, toolCall(view, req), req.Params.InputResponses, req.Params.RequestState) // requeststate.go
				if err != nil {
					return nil, err
				}
				res, err := sb.CallServerTool(ctx, v.key, name, args, progressOf(ctx, req))
				if err != nil {
					return nil, serverError(err) // rpcerror.go
				}
				return s.sealRound(res, view, req), nil
			})
			v.registered[t.Name] = t
		}
		var gone []string
		for name := range v.registered {
			if !seen[name] {
				gone = append(gone, name)
				delete(v.registered, name)
			}
		}
		if len(gone) > 0 {
			v.srv.RemoveTools(gone...)
		}
	}
	read := func(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		return s.relayResource(ctx, view, req, func(ctx context.Context) (*mcp.ReadResourceResult, error) { // relay.go
			return sb.ReadServerResource(ctx, v.key, req.Params.URI)
		})
	}
	syncNamed(&v.resourceList, v.resources, offer.Resources, func(r *mcp.Resource) string { return r.URI },
		func(r *mcp.Resource) { v.srv.AddResource(r, read) }, v.srv.RemoveResources)
	syncNamed(&v.templateList, v.templates, offer.Templates, func(t *mcp.ResourceTemplate) string { return t.URITemplate },
		func(t *mcp.ResourceTemplate) { v.srv.AddResourceTemplate(t, read) }, v.srv.RemoveResourceTemplates)
	syncNamed(&v.promptList, v.prompts, offer.Prompts, func(p *mcp.Prompt) string { return p.Name },
		func(p *mcp.Prompt) {
			v.srv.AddPrompt(p, func(ctx context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
				return s.relayPrompt(ctx, view, req, func(ctx context.Context) (*mcp.GetPromptResult, error) { // relay.go
					return sb.GetServerPrompt(ctx, v.key, req.Params.Name, req.Params.Arguments)
				})
			})
		}, v.srv.RemovePrompts)
}

// syncNamed brings registered (name → JSON of what is registered) in line
// with items: add registers an item new or changed, remove takes the names
// of those gone. last is the items brought in before: the same slice again
// is no change, and costs no walk.
func syncNamed[T any](last *[]T, registered map[string]string, items []T, name func(T) string, add func(T), remove func(...string)) {
	if sameSlice(*last, items) {
		return
	}
	*last = items
	seen := make(map[string]bool, len(items))
	for _, it := range items {
		n := name(it)
		seen[n] = true
		data, err := json.Marshal(it)
		if err != nil || registered[n] == string(data) {
			continue
		}
		registered[n] = string(data)
		add(it)
	}
	var gone []string
	for n := range registered {
		if !seen[n] {
			gone = append(gone, n)
			delete(registered, n)
		}
	}
	if len(gone) > 0 {
		remove(gone...)
	}
}
