package router

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/musterd/musterd/pkg/catalogue"
	"github.com/musterd/musterd/pkg/events"
)

// BenchmarkToolsWithNothingChanged is Tools with 100,000 server tools
// exposed and nothing changed since the last: what every Refresh of the
// endpoint costs the router while no server's offer changed.
func BenchmarkToolsWithNothingChanged(b *testing.B) {
	cat := catalogue.New(catalogue.Options{})
	for s := range 1000 {
		defs := make([]*mcp.Tool, 100)
		for i := range defs {
			defs[i] = &mcp.Tool{Name: fmt.Sprintf("t%03d", i), InputSchema: map[string]any{"type": "object"}}
		}
		cat.Update(events.NewKey("MCPServer", "default", fmt.Sprintf("s%04d", s)), catalogue.Naming{}, defs, time.Time{})
	}
	r, err := New(Options{Catalogue: cat, Servers: quietServers{}})
	if err != nil {
		b.Fatal(err)
	}
	r.Tools()
	b.ReportAllocs()
	for b.Loop() {
		r.Tools()
	}
}

// quietServers is a supervisor whose servers list nothing but tools.
type quietServers struct{ noServers }

func (quietServers) ListResources(context.Context, events.Key) ([]*mcp.Resource, error) {
	return nil, nil
}
func (quietServers) ListResourceTemplates(context.Context, events.Key) ([]*mcp.ResourceTemplate, error) {
	return nil, nil
}
func (quietServers) ListPrompts(context.Context, events.Key) ([]*mcp.Prompt, error) { return nil, nil }
