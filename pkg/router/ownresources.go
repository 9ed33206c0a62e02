package router

import (
	"context"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// ResourceSource offers resources musterd serves itself (auth://status,
// package coretools), listed after and read ahead of the servers': a
// server's resource of the same URI is not reachable. A subscription to
// one is taken and never announces anything: it is read afresh each time.
type ResourceSource interface {
	// OwnResources are the resources it serves, sorted by URI; the same
	// values from call to call.
	OwnResources() []*mcp.Resource
	// ReadOwnResource reads uri, which it serves when ok; the caller is in
	// ctx (package identity).
	ReadOwnResource(ctx context.Context, uri string) (res *mcp.ReadResourceResult, ok bool, err error)
}

// ownResources are the own source's resources, or none.
func (r *Router) ownResources() []*mcp.Resource {
	if r.own == nil {
		return nil
	}
	return r.own.OwnResources()
}

// readOwn reads uri when the own source serves it.
func (r *Router) readOwn(ctx context.Context, uri string) (*mcp.ReadResourceResult, bool, error) {
	if r.own == nil {
		return nil, false, nil
	}
	return r.own.ReadOwnResource(ctx, uri)
}

// servesOwn says whether uri is one of the own source's resources.
func (r *Router) servesOwn(uri string) bool {
	for _, res := range r.ownResources() {
		if res.URI == uri {
			return true
		}
	}
	return false
}
