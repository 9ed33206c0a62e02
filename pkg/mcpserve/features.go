package mcpserve

import (
	"context"
	"fmt"
	"slices"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/musterd/musterd/pkg/tooldef"
)

// syncResources brings both views' native resources in line with the
// Backend's, and reports whether they changed.
func (s *Server) syncResources() bool {
	want := map[string]*mcp.Resource{}
	for _, r := range s.opts.Backend.Resources() {
		if r != nil && r.URI != "" {
			want[r.URI] = r
		}
	}
	var removed []string
	for uri := range s.resources {
		if _, ok := want[uri]; !ok {
			removed = append(removed, uri)
			delete(s.resources, uri)
		}
	}
	changed := len(removed) > 0
	if changed {
		slices.Sort(removed)
		s.meta.RemoveResources(removed...)
		s.direct.RemoveResources(removed...)
	}
	for uri, r := range want {
		def, err := tooldef.Marshal(r, false)
		if err != nil || s.resources[uri] == string(def) {
			continue
		}
		if err := s.addResource(r); err != nil {
			s.log.Warn("resource not served", "uri", uri, "error", err)
			continue
		}
		s.resources[uri] = string(def)
		changed = true
	}
	return changed
}

func (s *Server) addResource(r *mcp.Resource) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("rejected by the go-sdk: %v", p)
		}
	}()
	s.meta.AddResource(r, s.readHandler(viewMuster))
	s.direct.AddResource(r, s.readHandler(viewDirect))
	return nil
}

// syncPrompts brings both views' native prompts in line with the
// Backend's, and reports whether they changed.
func (s *Server) syncPrompts() bool {
	want := map[string]*mcp.Prompt{}
	for _, p := range s.opts.Backend.Prompts() {
		if p != nil && p.Name != "" {
			want[p.Name] = p
		}
	}
	var removed []string
	for name := range s.prompts {
		if _, ok := want[name]; !ok {
			removed = append(removed, name)
			delete(s.prompts, name)
		}
	}
	changed := len(removed) > 0
	if changed {
		slices.Sort(removed)
		s.meta.RemovePrompts(removed...)
		s.direct.RemovePrompts(removed...)
	}
	for name, p := range want {
		def, err := tooldef.Marshal(p, false)
		if err != nil || s.prompts[name] == string(def) {
			continue
		}
		s.meta.AddPrompt(p, s.promptHandler(viewMuster))
		s.direct.AddPrompt(p, s.promptHandler(viewDirect))
		s.prompts[name] = string(def)
		changed = true
	}
	return changed
}

// readHandler reads a resource through the Backend on view, relaying
// what a server asks of a newer client (relay.go).
func (s *Server) readHandler(view string) mcp.ResourceHandler {
	return func(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		ctx = s.withCaller(ctx, req.Session)
		return s.relayResource(ctx, view, req, func(ctx context.Context) (*mcp.ReadResourceResult, error) {
			return s.opts.Backend.ReadResource(ctx, req.Params.URI)
		})
	}
}

// promptHandler gets a prompt through the Backend on view, relaying what
// a server asks of a newer client (relay.go).
func (s *Server) promptHandler(view string) mcp.PromptHandler {
	return func(ctx context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		return s.relayPrompt(ctx, view, req, func(ctx context.Context) (*mcp.GetPromptResult, error) {
			return s.opts.Backend.GetPrompt(ctx, req.Params.Name, req.Params.Arguments)
		})
	}
}

// templater is what a Backend may offer beside its resources: their URI
// templates (package router's Router does).
type templater interface {
	ResourceTemplates() []*mcp.ResourceTemplate
}

// syncTemplates brings both views' native resource templates in line with
// the Backend's, if it offers them, and reports whether they changed.
func (s *Server) syncTemplates() bool {
	t, ok := s.opts.Backend.(templater)
	if !ok {
		return false
	}
	want := map[string]*mcp.ResourceTemplate{}
	for _, rt := range t.ResourceTemplates() {
		if rt != nil && rt.URITemplate != "" {
			want[rt.URITemplate] = rt
		}
	}
	var removed []string
	for uri := range s.templates {
		if _, ok := want[uri]; !ok {
			removed = append(removed, uri)
			delete(s.templates, uri)
		}
	}
	changed := len(removed) > 0
	if changed {
		slices.Sort(removed)
		s.meta.RemoveResourceTemplates(removed...)
		s.direct.RemoveResourceTemplates(removed...)
	}
	for uri, rt := range want {
		def, err := tooldef.Marshal(rt, false)
		if err != nil || s.templates[uri] == string(def) {
			continue
		}
		if err := s.addTemplate(rt); err != nil {
			s.log.Warn("resource template not served", "uri_template", uri, "error", err)
			continue
		}
		s.templates[uri] = string(def)
		changed = true
	}
	return changed
}

func (s *Server) addTemplate(rt *mcp.ResourceTemplate) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("rejected by the go-sdk: %v", p)
		}
	}()
	s.meta.AddResourceTemplate(rt, s.readHandler(viewMuster))
	s.direct.AddResourceTemplate(rt, s.readHandler(viewDirect))
	return nil
}

// listResources returns the Backend's resources.
func (s *Server) listResources() []*mcp.Resource { return s.opts.Backend.Resources() }

// listPrompts returns the Backend's prompts.
func (s *Server) listPrompts() []*mcp.Prompt { return s.opts.Backend.Prompts() }
