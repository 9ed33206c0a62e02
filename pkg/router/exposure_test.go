package router_test

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/musterd/musterd/pkg/catalogue"
	"github.com/musterd/musterd/pkg/events"
	"github.com/musterd/musterd/pkg/router"
)

// A server's exposure policy filters and prefixes its prompts and
// resources, routes a renamed tool to its own name, and its own view
// refuses what the policy leaves out.
func TestAnExposurePolicyShapesEveryViewOfAServer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		notes := key("notes")
		f := &fakeServers{
			result:    &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ok"}}},
			resources: map[events.Key][]*mcp.Resource{notes: {{URI: "todo", Name: "todo"}, {URI: "secret", Name: "secret"}}},
			templates: map[events.Key][]*mcp.ResourceTemplate{},
			prompts:   map[events.Key][]*mcp.Prompt{notes: {{Name: "summarise"}, {Name: "debug-dump"}}},
		}
		r, cat, _ := newUnit(t, f, nil)
		p, err := catalogue.ParseExposure(`
prefix: ""
tools: {exclude: [wipe], overrides: {read: {name: read-note}}}
prompts: {exclude: ["debug-*"]}
resources: {include: [todo]}
`)
		require.NoError(t, err)
		cat.SetExposure(notes, p)
		cat.Update(notes, catalogue.Naming{}, defs("read", "wipe"), time.Time{})
		synctest.Wait()

		var names []string
		for _, t := range r.Tools() {
			names = append(names, t.Name)
		}
		assert.Equal(t, []string{"read-note"}, names)
		_, err = r.CallTool(t.Context(), "read-note", map[string]any{"id": 1}, nil)
		require.NoError(t, err)
		_, err = r.CallTool(t.Context(), "wipe", nil, nil)
		assert.ErrorIs(t, err, router.ErrUnknownTool)
		_, err = r.CallTool(t.Context(), "x_notes_read", nil, nil)
		assert.ErrorIs(t, err, router.ErrUnknownTool, "the old name is gone")

		var prompts []string
		for _, p := range r.Prompts() {
			prompts = append(prompts, p.Name)
		}
		assert.Equal(t, []string{"summarise"}, prompts, "filtered, and bare")
		var uris []string
		for _, res := range r.Resources() {
			uris = append(uris, res.URI)
		}
		assert.Equal(t, []string{"todo"}, uris)

		_, err = r.CallServerTool(t.Context(), notes, "wipe", nil, nil)
		assert.ErrorIs(t, err, router.ErrUnknownTool)
		assert.ErrorContains(t, err, `tool "wipe" of MCPServer/default/notes is not exposed`)
		_, err = r.CallServerTool(t.Context(), notes, "read", nil, nil)
		require.NoError(t, err, "the server's view calls by its own name")
		_, err = r.GetServerPrompt(t.Context(), notes, "debug-dump", nil)
		assert.ErrorIs(t, err, router.ErrUnknownTool)
		_, err = r.ReadServerResource(t.Context(), notes, "secret")
		assert.ErrorIs(t, err, router.ErrUnknownTool)
		assert.Equal(t, []string{`notes read {"id":1}`, "notes read {}"}, f.calls, "what was refused never reached the server")

		told := 0
		r.OnChange(func() { told++ })
		cat.SetExposure(notes, nil)
		synctest.Wait()
		prompts = nil
		for _, p := range r.Prompts() {
			prompts = append(prompts, p.Name)
		}
		assert.Equal(t, []string{"x_notes_debug-dump", "x_notes_summarise"}, prompts, "the policy lifted: every prompt, muster's names")
		assert.Positive(t, told, "and the watchers are told")
	})
}
