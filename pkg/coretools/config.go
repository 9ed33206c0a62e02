package coretools

import (
	"context"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/musterd/musterd/pkg/tooldef"
)

// configGet is core_config_get: the daemon's configuration as
// Options.Config gives it (muster's shape), or an empty object.
func (p *Provider) configGet(context.Context, tooldef.Args) (*mcp.CallToolResult, error) {
	if p.opts.Config == nil {
		return tooldef.JSON(map[string]any{})
	}
	return tooldef.JSON(p.opts.Config())
}
