package catalogue

import (
	"slices"

	"github.com/musterd/musterd/pkg/events"
)

// MaxGoneServers bounds how many servers that stopped running the
// catalogue remembers the tools of (Gone): the oldest is forgotten first.
const MaxGoneServers = 256

// GoneTool is a tool that a server offered until it stopped running.
type GoneTool struct {
	// Server offered it.
	Server events.Key
	// Tool is the server's own name of the tool.
	Tool string
}

// goneTools remembers the tools of servers that stopped running, so that a
// call of one can say that its server is not running, as muster's does,
// rather than that no such tool exists. A family tool is not remembered:
// its name is the family's, and while another member offers it a call
// names the instance that is not available.
type goneTools struct {
	names map[string]GoneTool
	order []events.Key // the servers remembered, the one gone longest first
}

// forget drops what is remembered of server. c.mu is held.
func (g *goneTools) forget(server events.Key) {
	i := slices.Index(g.order, server)
	if i < 0 {
		return
	}
	g.order = slices.Delete(g.order, i, i+1)
	for name, t := range g.names {
		if t.Server == server {
			delete(g.names, name)
		}
	}
}

// remember records the tools of server, which stopped running: each name
// with the server's own name of the tool. c.mu is held.
func (g *goneTools) remember(server events.Key, tools map[string]GoneTool) {
	g.forget(server)
	if len(tools) == 0 {
		return
	}
	if g.names == nil {
		g.names = map[string]GoneTool{}
	}
	for name, t := range tools {
		g.names[name] = t
	}
	g.order = append(g.order, server)
	for len(g.order) > MaxGoneServers {
		g.forget(g.order[0])
	}
}

// Gone returns the tool that a server offered under the exposed name tool
// until it stopped running, if no running server offers that name now.
// Names of family tools are not kept, nor those of more than
// MaxGoneServers servers.
func (c *Catalogue) Gone(tool string) (GoneTool, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if c.names[tool] != nil {
		return GoneTool{}, false
	}
	t, ok := c.gone.names[tool]
	return t, ok
}
