package mcpserve

import (
	"context"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// configGet is core_config_get: the daemon's configuration as
// Options.Config gives it (muster's shape), or an empty object.
func (s *Server) configGet(context.Context, args) (*mcp.CallToolResult, error) {
	if s.opts.Config == nil {
		return jsonResult(map[string]any{})
	}
	return jsonResult(s.opts.Config())
}
