package router

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/yosida95/uritemplate/v3"

	"github.com/musterd/musterd/internal/jsoneq"
	"github.com/musterd/musterd/pkg/catalogue"
	"github.com/musterd/musterd/pkg/events"
	"github.com/musterd/musterd/pkg/supervisor"
)

// Errors of the resource and prompt calls for a name no running server
// offers.
var (
	ErrUnknownResource = errors.New("no running server offers this resource")
	ErrUnknownPrompt   = errors.New("no running server offers this prompt")
)

// Resources and prompts are not in the catalogue, which the supervisor
// keeps in step with each server's tools/list. The router keeps them
// itself, listed from each running server in the background: when the
// catalogue says the server started or listed its tools again, and when
// the server sends resources/list_changed or prompts/list_changed (through
// the supervisor's WatchLists). Resources, ResourceTemplates and Prompts
// answer from what was listed, at once; a read or get of a name not (yet)
// listed lists every running server again first. They are exposed by
// muster's rule:
//
//   - a resource URI (or URI template) with a scheme ("file:///x",
//     "demo://resource/static/document/x.md") is exposed unchanged: it
//     names itself; of two servers listing one, the first by key serves
//     it;
//   - any other URI, and every prompt name, is exposed like a tool name,
//     {global prefix}_{toolPrefix or server name}_{name}. A family member's
//     resources and prompts are its own (by toolPrefix or name, not the
//     family's), since no instance argument picks among them.

// route is where an exposed resource URI or prompt name goes: the server
// and its own URI or name.
type route struct {
	server events.Key
	own    string
}

// offered is what one server listed.
type offered struct {
	resources []*mcp.Resource
	templates []*mcp.ResourceTemplate
	prompts   []*mcp.Prompt
}

// view is what the router exposes of all servers' listings.
type view struct {
	resources  []*mcp.Resource // by exposed URI
	templates  []*mcp.ResourceTemplate
	prompts    []*mcp.Prompt // by exposed name
	uris       map[string]route
	uriPrefix  map[string]events.Key // "x_echo_" → the server whose prefixed URIs and templates these are
	tmplRoutes []templateRoute
	// templateNames is each exposed URI template → its server and own
	// template, which a completion names.
	templateNames map[string]route
	names         map[string]route
}

// templateRoute is one server's resource template.
type templateRoute struct {
	server   events.Key
	prefix   string // what the exposed template adds before the server's own
	template *uritemplate.Template
}

// listings keeps the servers' resources and prompts.
type listings struct {
	r *Router

	mu      sync.Mutex
	servers map[events.Key]*offered
	busy    map[events.Key]bool // a listing of the server runs
	again   map[events.Key]bool // and another is due after it
	current view
}

func (l *listings) init(r *Router) {
	l.r = r
	l.servers = map[events.Key]*offered{}
	l.busy = map[events.Key]bool{}
	l.again = map[events.Key]bool{}
	l.current = l.r.makeView(nil)
}

// schedule lists key's server again in the background, or forgets it when
// it no longer runs. Never blocks: it may run under the supervisor's lock.
func (l *listings) schedule(key events.Key, running bool) {
	l.mu.Lock()
	if !running {
		_, had := l.servers[key]
		delete(l.servers, key)
		changed := had && l.rebuildLocked()
		l.mu.Unlock()
		l.r.forgetSession(key) // subscribe.go
		if changed {
			l.r.changed()
		}
		return
	}
	if l.busy[key] {
		l.again[key] = true
		l.mu.Unlock()
		return
	}
	l.busy[key] = true
	l.mu.Unlock()
	go l.refresh(key)
}

// refresh lists key's server until no further listing is due.
func (l *listings) refresh(key events.Key) {
	for {
		ctx, cancel := context.WithTimeout(context.Background(), l.r.listTimeout)
		got := l.r.list(ctx, key)
		cancel()

		l.mu.Lock()
		changed, running := false, l.r.running(key)
		if running {
			l.servers[key] = got
			changed = l.rebuildLocked()
		}
		again := l.again[key]
		delete(l.again, key)
		if !again {
			delete(l.busy, key)
		}
		l.mu.Unlock()
		if changed {
			l.r.changed()
		}
		if running {
			l.r.resubscribe(key) // subscribe.go: a new session has none
		}
		if !again {
			return
		}
	}
}

// list asks key's server for its resources, templates and prompts; what
// fails is left empty, and logged.
func (r *Router) list(ctx context.Context, key events.Key) *offered {
	var o offered
	var errs []error
	var err error
	if o.resources, err = r.servers.ListResources(ctx, key); err != nil {
		errs = append(errs, fmt.Errorf("resources/list: %w", err))
	}
	if o.templates, err = r.servers.ListResourceTemplates(ctx, key); err != nil {
		errs = append(errs, fmt.Errorf("resources/templates/list: %w", err))
	}
	if o.prompts, err = r.servers.ListPrompts(ctx, key); err != nil {
		errs = append(errs, fmt.Errorf("prompts/list: %w", err))
	}
	if len(errs) > 0 && !errors.Is(errors.Join(errs...), supervisor.ErrNotRunning) {
		r.log.Warn("mcp server: listing its resources or prompts failed; what failed is left out",
			"key", key.String(), "error", errors.Join(errs...).Error())
	}
	return &o
}

// running reports whether the catalogue has key's server running.
func (r *Router) running(key events.Key) bool {
	for _, s := range r.cat.Servers() {
		if s.Key == key {
			return true
		}
	}
	return false
}

// rebuildLocked recomputes the exposed view and reports whether what
// Resources, ResourceTemplates or Prompts answer changed.
func (l *listings) rebuildLocked() bool {
	next := l.r.makeView(l.servers)
	changed := !jsoneq.Equal(next.resources, l.current.resources) || !jsoneq.Equal(next.templates, l.current.templates) ||
		!jsoneq.Equal(next.prompts, l.current.prompts)
	l.current = next
	return changed
}

// makeView exposes what servers listed, under muster's naming.
func (r *Router) makeView(servers map[events.Key]*offered) view {
	v := view{uris: map[string]route{}, uriPrefix: map[string]events.Key{}, names: map[string]route{}, templateNames: map[string]route{}}
	for _, s := range r.cat.Servers() { // sorted by key: the first wins a shared name
		o := servers[s.Key]
		if o == nil {
			continue
		}
		naming := catalogue.Naming{ToolPrefix: s.Naming.ToolPrefix}
		policy := r.cat.Exposure(s.Key)
		for _, res := range o.resources {
			if res == nil || !policy.KeepsResource(res.URI) {
				continue
			}
			uri := r.exposedURI(s.Key, naming, policy, res.URI)
			if _, taken := v.uris[uri]; taken {
				continue
			}
			v.uris[uri] = route{server: s.Key, own: res.URI}
			exposed := *res
			exposed.URI = uri
			v.resources = append(v.resources, &exposed)
		}
		for _, t := range o.templates {
			if t == nil || !policy.KeepsResource(t.URITemplate) {
				continue
			}
			uri := r.exposedURI(s.Key, naming, policy, t.URITemplate)
			if _, taken := v.templateNames[uri]; taken {
				continue
			}
			v.templateNames[uri] = route{server: s.Key, own: t.URITemplate}
			exposed := *t
			exposed.URITemplate = uri
			v.templates = append(v.templates, &exposed)
			if tmpl, err := uritemplate.New(t.URITemplate); err == nil {
				v.tmplRoutes = append(v.tmplRoutes, templateRoute{server: s.Key, prefix: strings.TrimSuffix(uri, t.URITemplate), template: tmpl})
			}
		}
		for _, p := range o.prompts {
			if p == nil || !policy.KeepsPrompt(p.Name) {
				continue
			}
			name := r.cat.NameUnder(s.Key, naming, policy, p.Name)
			if _, taken := v.names[name]; taken {
				continue
			}
			v.names[name] = route{server: s.Key, own: p.Name}
			exposed := *p
			exposed.Name = name
			v.prompts = append(v.prompts, &exposed)
		}
	}
	slices.SortFunc(v.resources, func(a, b *mcp.Resource) int { return cmp.Compare(a.URI, b.URI) })
	slices.SortFunc(v.templates, func(a, b *mcp.ResourceTemplate) int { return cmp.Compare(a.URITemplate, b.URITemplate) })
	slices.SortFunc(v.prompts, func(a, b *mcp.Prompt) int { return cmp.Compare(a.Name, b.Name) })
	return v
}

// exposedURI is the URI a client sees of uri, a resource's (or template's)
// of server under its exposure policy.
func (r *Router) exposedURI(server events.Key, naming catalogue.Naming, policy *catalogue.Exposure, uri string) string {
	if strings.Contains(uri, "://") {
		return uri
	}
	return r.cat.NameUnder(server, naming, policy, uri)
}

func (l *listings) snapshot() view {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.current
}

// Resources returns the resources of the running servers under their
// exposed URIs, sorted by URI, as last listed, but for a URI musterd
// serves itself; then musterd's own (Options.OwnResources). Shared: never
// change one.
func (r *Router) Resources() []*mcp.Resource {
	own := r.ownResources()
	if len(own) == 0 {
		return slices.Clone(r.listings.snapshot().resources)
	}
	var out []*mcp.Resource
	for _, res := range r.listings.snapshot().resources {
		if !r.servesOwn(res.URI) {
			out = append(out, res)
		}
	}
	return append(out, own...)
}

// ResourceTemplates returns the resource templates of the running servers
// under their exposed URI templates, sorted, as last listed. Shared: never
// change one.
func (r *Router) ResourceTemplates() []*mcp.ResourceTemplate {
	return slices.Clone(r.listings.snapshot().templates)
}

// Prompts returns the prompts of the running servers under their exposed
// names, sorted by name, as last listed. Shared: never change one.
func (r *Router) Prompts() []*mcp.Prompt { return slices.Clone(r.listings.snapshot().prompts) }

// ReadResource reads musterd's own resource of uri, else the resource of
// the exposed uri from its server: one
// it lists or, failing that, one of its resource templates matches. The
// result is the server's, unchanged. A uri no running server offers, even
// when listed again, fails with ErrUnknownResource.
func (r *Router) ReadResource(ctx context.Context, uri string) (*mcp.ReadResourceResult, error) {
	if res, ok, err := r.readOwn(ctx, uri); ok {
		return res, err
	}
	to, ok := r.listings.snapshot().resolveURI(uri)
	if !ok {
		if err := r.relistAll(ctx); err != nil {
			return nil, err
		}
		if to, ok = r.listings.snapshot().resolveURI(uri); !ok {
			return nil, fmt.Errorf("resource %q: %w", uri, ErrUnknownResource)
		}
	}
	return r.servers.ReadResource(ctx, to.server, &mcp.ReadResourceParams{URI: to.own})
}

func (v view) resolveURI(uri string) (route, bool) {
	if to, ok := v.uris[uri]; ok {
		return to, true
	}
	for _, t := range v.tmplRoutes {
		own, ok := strings.CutPrefix(uri, t.prefix)
		if ok && t.template.Match(own) != nil {
			return route{server: t.server, own: own}, true
		}
	}
	return route{}, false
}

// GetPrompt gets the prompt of the exposed name from its server, with
// args. The result is the server's, unchanged. A name no running server
// offers, even when listed again, fails with ErrUnknownPrompt.
func (r *Router) GetPrompt(ctx context.Context, name string, args map[string]string) (*mcp.GetPromptResult, error) {
	to, ok := r.listings.snapshot().names[name]
	if !ok {
		if err := r.relistAll(ctx); err != nil {
			return nil, err
		}
		if to, ok = r.listings.snapshot().names[name]; !ok {
			return nil, fmt.Errorf("prompt %q: %w", name, ErrUnknownPrompt)
		}
	}
	return r.servers.GetPrompt(ctx, to.server, &mcp.GetPromptParams{Name: to.own, Arguments: args})
}

// relistAll lists every running server now, in parallel, for a name not
// found: a server may have started, or changed its lists without saying.
func (r *Router) relistAll(ctx context.Context) error {
	servers := r.cat.Servers()
	got := make([]*offered, len(servers))
	var wg sync.WaitGroup
	for i, s := range servers {
		wg.Go(func() { got[i] = r.list(ctx, s.Key) })
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("listing the servers' resources and prompts: %w", context.Cause(ctx))
	}
	l := &r.listings
	l.mu.Lock()
	for i, s := range servers {
		if r.running(s.Key) {
			l.servers[s.Key] = got[i]
		}
	}
	changed := l.rebuildLocked()
	l.mu.Unlock()
	if changed {
		r.changed()
	}
	return nil
}
