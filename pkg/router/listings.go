package router

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/yosida95/uritemplate/v3"

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

// Resources and prompts are not in the catalogue: servers change them
// without telling (few send resources/list_changed), and only clients that
// ask need them. They are listed from the running servers when asked, as
// muster's aggregator does, and exposed by its rule:
//
//   - a resource URI (or URI template) with a scheme ("file:///x",
//     "test://static/resource/1") is exposed unchanged: it names itself;
//     of two servers listing one, the first by key serves it;
//   - any other URI, and every prompt name, is exposed like a tool name,
//     {global prefix}_{toolPrefix or server name}_{name}. A family member's
//     resources and prompts are its own (by toolPrefix or name, not the
//     family's), since no instance argument picks among them.
//
// Each listing remembers where each exposed name goes; a read or get of a
// name not remembered lists again first, so a name is found as soon as its
// server offers it.

// route is where an exposed resource URI or prompt name goes: the server
// and its own URI or name.
type route struct {
	server events.Key
	own    string
}

// templateRoute is one server's resource template.
type templateRoute struct {
	server   events.Key
	prefix   string // "" for a template with a scheme, else "{global}_{prefix}_"
	template *uritemplate.Template
}

// listings remembers the routes of the last listings; a change of the
// catalogue forgets them.
type listings struct {
	cat *catalogue.Catalogue

	mu        sync.Mutex
	resources map[string]route // nil: not listed since the last change
	prompts   map[string]route
}

func (l *listings) init(cat *catalogue.Catalogue) { l.cat = cat }

func (l *listings) invalidate() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.resources, l.prompts = nil, nil
}

func (l *listings) lookup(resources bool, name string) (route, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	m := l.prompts
	if resources {
		m = l.resources
	}
	r, ok := m[name]
	return r, ok
}

// exposedURI is the URI a client sees of uri, a resource's (or template's)
// of server.
func (l *listings) exposedURI(server catalogue.Server, uri string) string {
	if strings.Contains(uri, "://") {
		return uri
	}
	return l.cat.ExposedName(server.Key, catalogue.Naming{ToolPrefix: server.Naming.ToolPrefix}, uri)
}

func (l *listings) exposedPrompt(server catalogue.Server, name string) string {
	return l.cat.ExposedName(server.Key, catalogue.Naming{ToolPrefix: server.Naming.ToolPrefix}, name)
}

// each runs list for every running server in parallel and returns the
// results in the order of the servers, leaving out those that failed: one
// server's failure does not hide the others'.
func each[T any](ctx context.Context, r *Router, what string, list func(context.Context, events.Key) ([]T, error)) ([]catalogue.Server, [][]T, error) {
	servers := r.cat.Servers()
	results := make([][]T, len(servers))
	var wg sync.WaitGroup
	for i, s := range servers {
		wg.Go(func() {
			items, err := list(ctx, s.Key)
			if err != nil {
				if ctx.Err() == nil {
					r.log.Warn("mcp server: listing failed; left out", "what", what, "key", s.Key.String(), "error", err.Error())
				}
				return
			}
			results[i] = items
		})
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return nil, nil, fmt.Errorf("listing %s: %w", what, context.Cause(ctx))
	}
	return servers, results, nil
}

// Resources returns the resources of every running server, under their
// exposed URIs, in the order of the servers (by key), each server's in its
// own order. A server whose listing fails is left out.
func (r *Router) Resources(ctx context.Context) ([]*mcp.Resource, error) {
	servers, results, err := each(ctx, r, "resources", r.servers.ListResources)
	if err != nil {
		return nil, err
	}
	index := map[string]route{}
	var out []*mcp.Resource
	for i, s := range servers {
		for _, res := range results[i] {
			if res == nil {
				continue
			}
			uri := r.listings.exposedURI(s, res.URI)
			if _, taken := index[uri]; taken {
				continue
			}
			index[uri] = route{server: s.Key, own: res.URI}
			exposed := *res
			exposed.URI = uri
			out = append(out, &exposed)
		}
	}
	r.listings.mu.Lock()
	r.listings.resources = index
	r.listings.mu.Unlock()
	return out, nil
}

// ResourceTemplates returns the resource templates of every running
// server, under their exposed URI templates, as Resources does.
func (r *Router) ResourceTemplates(ctx context.Context) ([]*mcp.ResourceTemplate, error) {
	servers, results, err := each(ctx, r, "resource templates", r.servers.ListResourceTemplates)
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	var out []*mcp.ResourceTemplate
	for i, s := range servers {
		for _, t := range results[i] {
			if t == nil {
				continue
			}
			uri := r.listings.exposedURI(s, t.URITemplate)
			if seen[uri] {
				continue
			}
			seen[uri] = true
			exposed := *t
			exposed.URITemplate = uri
			out = append(out, &exposed)
		}
	}
	return out, nil
}

// ReadResource reads the resource of the exposed uri from its server: a
// resource it lists or, failing that, one of its resource templates
// matches. The result is the server's, unchanged. A uri no running server
// offers fails with ErrUnknownResource.
func (r *Router) ReadResource(ctx context.Context, uri string) (*mcp.ReadResourceResult, error) {
	to, err := r.resolveResource(ctx, uri)
	if err != nil {
		return nil, err
	}
	res, err := r.servers.ReadResource(ctx, to.server, &mcp.ReadResourceParams{URI: to.own})
	if errors.Is(err, supervisor.ErrNotRunning) {
		r.listings.invalidate() // its server went: the next read lists again
	}
	return res, err
}

func (r *Router) resolveResource(ctx context.Context, uri string) (route, error) {
	if to, ok := r.listings.lookup(true, uri); ok {
		return to, nil
	}
	if _, err := r.Resources(ctx); err != nil {
		return route{}, err
	}
	if to, ok := r.listings.lookup(true, uri); ok {
		return to, nil
	}
	servers, results, err := each(ctx, r, "resource templates", r.servers.ListResourceTemplates)
	if err != nil {
		return route{}, err
	}
	for i, s := range servers {
		for _, t := range results[i] {
			if t == nil {
				continue
			}
			exposed := r.listings.exposedURI(s, t.URITemplate)
			prefix := strings.TrimSuffix(exposed, t.URITemplate)
			own, ok := strings.CutPrefix(uri, prefix)
			if !ok {
				continue
			}
			tmpl, err := uritemplate.New(t.URITemplate)
			if err != nil {
				continue // not a template we can match
			}
			if tmpl.Match(own) != nil {
				return route{server: s.Key, own: own}, nil
			}
		}
	}
	return route{}, fmt.Errorf("resource %q: %w", uri, ErrUnknownResource)
}

// Prompts returns the prompts of every running server, under their exposed
// names, in the order of the servers, each server's in its own order. A
// server whose listing fails is left out.
func (r *Router) Prompts(ctx context.Context) ([]*mcp.Prompt, error) {
	servers, results, err := each(ctx, r, "prompts", r.servers.ListPrompts)
	if err != nil {
		return nil, err
	}
	index := map[string]route{}
	var out []*mcp.Prompt
	for i, s := range servers {
		for _, p := range results[i] {
			if p == nil {
				continue
			}
			name := r.listings.exposedPrompt(s, p.Name)
			if _, taken := index[name]; taken {
				continue
			}
			index[name] = route{server: s.Key, own: p.Name}
			exposed := *p
			exposed.Name = name
			out = append(out, &exposed)
		}
	}
	r.listings.mu.Lock()
	r.listings.prompts = index
	r.listings.mu.Unlock()
	return out, nil
}

// GetPrompt gets the prompt of the exposed name from its server, with
// args. The result is the server's, unchanged. A name no running server
// offers fails with ErrUnknownPrompt.
func (r *Router) GetPrompt(ctx context.Context, name string, args map[string]string) (*mcp.GetPromptResult, error) {
	to, ok := r.listings.lookup(false, name)
	if !ok {
		if _, err := r.Prompts(ctx); err != nil {
			return nil, err
		}
		if to, ok = r.listings.lookup(false, name); !ok {
			return nil, fmt.Errorf("prompt %q: %w", name, ErrUnknownPrompt)
		}
	}
	res, err := r.servers.GetPrompt(ctx, to.server, &mcp.GetPromptParams{Name: to.own, Arguments: args})
	if errors.Is(err, supervisor.ErrNotRunning) {
		r.listings.invalidate()
	}
	return res, err
}
