package router

import (
	"context"
	"errors"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/musterd/musterd/pkg/catalogue"
	"github.com/musterd/musterd/pkg/supervisor"
)

// Claims reports whether name is a tool that a server offered until it
// stopped running (catalogue.Gone): the endpoint routes its call here
// although it is not listed, so that the call says which server is not
// running rather than that no such tool exists.
func (r *Router) Claims(name string) bool {
	_, ok := r.cat.Gone(name)
	return ok
}

// callGone calls name, a tool whose server stopped running (in view, the
// caller's), at that server:
// one starting again is waited for as any call is (and the call then
// succeeds), one that is not running fails with muster's "server not found"
// naming the tool, and the supervisor's error naming the server and its state, or saying
// that its definition is deleted (Options.Declared).
func (r *Router) callGone(ctx context.Context, view catalogue.View, name string, args map[string]any,
	progress func(*mcp.ProgressNotificationParams)) (*mcp.CallToolResult, bool, error) {
	gone, ok := view.Gone(name)
	if !ok {
		return nil, false, nil
	}
	if args == nil {
		args = map[string]any{}
	}
	res, err := r.servers.CallTool(ctx, gone.Server, &mcp.CallToolParams{Name: gone.Tool, Arguments: args}, progress)
	if err == nil {
		return res, true, nil
	}
	if se, isServerErr := errors.AsType[*supervisor.ServerError](err); isServerErr && se.State == "" {
		// The supervisor forgets a server it stops: stopped by its user,
		// or its definition deleted.
		if r.declared != nil && !r.declared(gone.Server) {
			return nil, true, fmt.Errorf("server not found: %s: tool %q: mcp server %s %w: its definition is deleted",
				gone.Server.Name, name, gone.Server, supervisor.ErrNotRunning)
		}
		stopped := *se
		stopped.State = "Stopped" // v1alpha1's, which the router does not import
		err = &stopped
	}
	return nil, true, fmt.Errorf("server not found: %s: tool %q: %w", gone.Server.Name, name, err)
}
