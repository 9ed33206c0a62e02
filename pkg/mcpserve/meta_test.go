package mcpserve

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/musterd/musterd/pkg/router"
	"github.com/musterd/musterd/pkg/tooldef"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var metaToolNames = []string{"call_tool", "describe_prompt", "describe_resource", "describe_tool", "filter_tools", "get_prompt", "get_resource",
	"list_core_tools", "list_prompts", "list_resources", "list_tools"}

var coreToolNames = []string{"core_auth_login", "core_auth_logout", "core_config_get", "core_events", "core_mcpserver_get", "core_mcpserver_list", "core_reconcile_status", "core_service_list",
	"core_service_status", "core_workflow_available", "core_workflow_get", "core_workflow_list"}

func TestMusterViewIsTheElevenMetaToolsWithMustersIdentity(t *testing.T) {
	h := newHarness(t, nil)
	h.backend.setTools(echoTool("x_fake_echo"))
	h.srv.Refresh()
	cs := h.connect(PathMCP, musterProtocol, nil)

	init := cs.InitializeResult()
	assert.Equal(t, musterProtocol, init.ProtocolVersion, "muster's clients speak 2024-11-05")
	assert.Equal(t, ServerName, init.ServerInfo.Name)
	assert.Equal(t, "1.2.3", init.ServerInfo.Version)
	require.NotNil(t, init.Capabilities.Tools)
	require.NotNil(t, init.Capabilities.Resources)
	require.NotNil(t, init.Capabilities.Prompts)

	list, err := cs.ListTools(context.Background(), nil)
	require.NoError(t, err)
	var names []string
	for _, tool := range list.Tools {
		names = append(names, tool.Name)
	}
	assert.Equal(t, metaToolNames, names, "the native list is the meta-tools alone, never a server's tool")

	// muster's argument names.
	schemas := map[string]map[string]any{}
	for _, tool := range list.Tools {
		data, _ := json.Marshal(tool.InputSchema)
		var s map[string]any
		require.NoError(t, json.Unmarshal(data, &s))
		schemas[tool.Name] = s
	}
	props := func(tool string) []string {
		var out []string
		for k := range schemas[tool]["properties"].(map[string]any) {
			out = append(out, k)
		}
		return sortedStrings(out)
	}
	assert.Equal(t, []string{"arguments", "name"}, props("call_tool"))
	assert.Equal(t, []any{"name"}, schemas["call_tool"]["required"])
	assert.Equal(t, []string{"case_sensitive", "description_filter", "include_schema", "labels", "limit", "offset", "pattern", "query"}, props("filter_tools"))
	assert.Equal(t, []string{"include_schema"}, props("list_core_tools"))
	assert.Equal(t, []string{"uri"}, props("get_resource"))
	assert.Equal(t, []string{"arguments", "name"}, props("get_prompt"))
}

func TestListToolsListsServerCoreAndProviderTools(t *testing.T) {
	wf := &fakeProvider{tools: []*mcp.Tool{{Name: "workflow_greet", Description: "Say hello", InputSchema: map[string]any{"type": "object"}}}}
	h := newHarness(t, func(o *setup) { o.sources = []router.Source{wf} })
	h.backend.setTools(echoTool("x_fake_echo"))
	h.srv.Refresh()
	cs := h.connect(PathMCP, musterProtocol, nil)

	got := decode[struct {
		Tools []struct{ Name, Description string } `json:"tools"`
	}](t, call(t, cs, "list_tools", nil))
	var names []string
	for _, tool := range got.Tools {
		names = append(names, tool.Name)
	}
	want := append(append([]string{}, coreToolNames...), "workflow_greet", "x_fake_echo")
	assert.Equal(t, want, names)
	assert.Equal(t, "Echo the message back", got.Tools[len(got.Tools)-1].Description)
	assert.Contains(t, text(t, call(t, cs, "list_tools", nil)), "\n  \"tools\": [", "pretty JSON, as muster prints it")

	desc := decode[map[string]any](t, call(t, cs, "describe_tool", map[string]any{"name": "x_fake_echo"}))
	assert.Equal(t, "x_fake_echo", desc["name"])
	assert.Equal(t, "object", desc["inputSchema"].(map[string]any)["type"])
	res := call(t, cs, "describe_tool", map[string]any{"name": "x_nope"})
	assert.True(t, res.IsError)
	assert.Equal(t, "Tool not found: x_nope", text(t, res))
}

func TestCallToolWrapsTheResultInMustersEnvelope(t *testing.T) {
	h := newHarness(t, nil)
	h.backend.setTools(echoTool("x_fake_echo"), echoTool("x_fake_fail"))
	h.backend.call = func(ctx context.Context, name string, args map[string]any, p func(*mcp.ProgressNotificationParams)) (*mcp.CallToolResult, error) {
		if name == "x_fake_fail" {
			return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "it failed"}}}, nil
		}
		return echo(ctx, name, args, p)
	}
	h.srv.Refresh()
	cs := h.connect(PathMCP, musterProtocol, nil)

	res := call(t, cs, "call_tool", map[string]any{"name": "x_fake_echo", "arguments": map[string]any{"message": "hi"}})
	assert.False(t, res.IsError)
	assert.Equal(t, map[string]any{"echoed": "hi"}, res.StructuredContent, "the outer structuredContent mirrors the tool's")
	assert.JSONEq(t, `{"isError":false,"content":[{"type":"text","text":"x_fake_echo: hi"}],"structuredContent":{"echoed":"hi"}}`, text(t, res))

	res = call(t, cs, "call_tool", map[string]any{"name": "x_fake_fail"})
	assert.True(t, res.IsError, "the outer isError mirrors the tool's")
	assert.JSONEq(t, `{"isError":true,"content":[{"type":"text","text":"it failed"}]}`, text(t, res))

	res = call(t, cs, "call_tool", map[string]any{"name": "x_gone_tool"})
	assert.True(t, res.IsError)
	assert.Equal(t, `Tool execution failed: unknown tool "x_gone_tool": tool not found: no core tool, running server or workflow offers it`, text(t, res), "no envelope when the call cannot be made")

	// Core tools go through call_tool too, as muster's CLI calls them.
	list := call(t, cs, "call_tool", map[string]any{"name": "core_service_list"})
	var env struct {
		IsError bool
		Content []struct{ Type, Text string }
	}
	require.NoError(t, json.Unmarshal([]byte(text(t, list)), &env))
	assert.False(t, env.IsError)
	assert.JSONEq(t, `{"services":[],"total":0}`, env.Content[0].Text)
}

func TestMetaToolsRejectArgumentsOfTheWrongType(t *testing.T) {
	h := newHarness(t, nil)
	cs := h.connect(PathMCP, musterProtocol, nil)
	for _, c := range []struct {
		tool string
		args map[string]any
		want string
	}{
		{"call_tool", map[string]any{"name": 5}, `call_tool: argument "name" must be a string, not an integer`},
		{"call_tool", map[string]any{}, `call_tool: argument "name" is required`},
		{"call_tool", map[string]any{"name": "core_service_list", "arguments": "x"}, `call_tool: argument "arguments" must be an object, not a string`},
		{"filter_tools", map[string]any{"limit": "ten"}, `filter_tools: argument "limit" must be a number, not a string`},
		{"filter_tools", map[string]any{"limit": 0}, `limit must be at least 1`},
		{"filter_tools", map[string]any{"pattern": "["}, `Invalid pattern "[": syntax error in pattern`},
		{"list_core_tools", map[string]any{"include_schema": "yes"}, `list_core_tools: argument "include_schema" must be a boolean, not a string`},
		{"describe_tool", map[string]any{"name": ""}, `describe_tool: argument "name" must not be empty`},
	} {
		res := call(t, cs, c.tool, c.args)
		assert.True(t, res.IsError, c.tool)
		assert.Equal(t, c.want, text(t, res), c.tool)
	}
	// A core tool's wrong argument, through call_tool: the inner result
	// says it, in the envelope.
	res := call(t, cs, "call_tool", map[string]any{"name": "core_mcpserver_get", "arguments": map[string]any{"name": true}})
	assert.True(t, res.IsError)
	assert.JSONEq(t, `{"isError":true,"content":[{"type":"text","text":"core_mcpserver_get: argument \"name\" must be a string, not a boolean"}]}`, text(t, res))
}

func TestFilterToolsPagesAndRanks(t *testing.T) {
	h := newHarness(t, nil)
	h.backend.setTools(
		&mcp.Tool{Name: "x_git_status", Description: "Show the working tree status\nLong text", InputSchema: map[string]any{"type": "object"}},
		&mcp.Tool{Name: "x_git_log", Description: "Show commit logs", InputSchema: map[string]any{"type": "object"}},
		&mcp.Tool{Name: "x_k8s_pods", Description: "List pods", InputSchema: map[string]any{"type": "object"}},
	)
	h.srv.Refresh()
	cs := h.connect(PathMCP, musterProtocol, nil)
	type page struct {
		Filters struct {
			Pattern string
			Limit   int
		}
		TotalTools    int `json:"total_tools"`
		FilteredCount int `json:"filtered_count"`
		Total         int
		Truncated     bool
		Tools         []toolInfo
	}
	p := decode[page](t, call(t, cs, "filter_tools", map[string]any{"pattern": "x_git_*", "limit": 1}))
	assert.Equal(t, len(coreToolNames)+3, p.TotalTools)
	assert.Equal(t, 2, p.Total)
	assert.Equal(t, 1, p.FilteredCount)
	assert.True(t, p.Truncated)
	assert.Equal(t, "x_git_log", p.Tools[0].Name)
	assert.Equal(t, "Show commit logs", p.Tools[0].Summary, "summaries by default")
	assert.Nil(t, p.Tools[0].InputSchema)

	p = decode[page](t, call(t, cs, "filter_tools", map[string]any{"query": "tree status"}))
	require.NotEmpty(t, p.Tools)
	assert.Equal(t, "x_git_status", p.Tools[0].Name, "best first")
	assert.Equal(t, "Show the working tree status", p.Tools[0].Summary, "the first line")
	assert.Greater(t, p.Tools[0].Score, 0.0)

	core := decode[page](t, call(t, cs, "list_core_tools", nil))
	require.Len(t, core.Tools, len(coreToolNames))
	for _, tool := range core.Tools {
		assert.NotNil(t, tool.InputSchema, "list_core_tools includes schemas by default")
		assert.NotEmpty(t, tool.Description)
	}
}

func TestResourcesAndPromptsThroughTheMetaTools(t *testing.T) {
	h := newHarness(t, nil)
	h.backend.resources = []*mcp.Resource{{URI: "test://fake/readme", Name: "readme", MIMEType: "text/plain"}}
	h.backend.prompts = []*mcp.Prompt{{Name: "x_fake_greet", Description: "Greet", Arguments: []*mcp.PromptArgument{{Name: "who", Required: true}}}}
	h.srv.Refresh()
	cs := h.connect(PathMCP, musterProtocol, nil)

	assert.JSONEq(t, `[{"uri":"test://fake/readme","name":"readme","description":"readme","mimeType":"text/plain"}]`, text(t, call(t, cs, "list_resources", nil)))
	assert.JSONEq(t, `{"uri":"test://fake/readme","name":"readme","description":"","mimeType":"text/plain"}`, text(t, call(t, cs, "describe_resource", map[string]any{"uri": "test://fake/readme"})))
	assert.Equal(t, "contents of test://fake/readme\n[Binary data: 3 bytes]", text(t, call(t, cs, "get_resource", map[string]any{"uri": "test://fake/readme"})))
	assert.JSONEq(t, `[{"name":"x_fake_greet","description":"Greet"}]`, text(t, call(t, cs, "list_prompts", nil)))
	assert.JSONEq(t, `{"name":"x_fake_greet","description":"Greet","arguments":[{"name":"who","description":"","required":true}]}`, text(t, call(t, cs, "describe_prompt", map[string]any{"name": "x_fake_greet"})))
	assert.JSONEq(t, `[{"role":"user","content":{"type":"text","text":"x_fake_greet for ada"}}]`, text(t, call(t, cs, "get_prompt", map[string]any{"name": "x_fake_greet", "arguments": map[string]any{"who": "ada"}})))

	// Natively too.
	res, err := cs.ListResources(context.Background(), nil)
	require.NoError(t, err)
	require.Len(t, res.Resources, 1)
	read, err := cs.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: "test://fake/readme"})
	require.NoError(t, err)
	assert.Equal(t, "contents of test://fake/readme", read.Contents[0].Text)
	prompt, err := cs.GetPrompt(context.Background(), &mcp.GetPromptParams{Name: "x_fake_greet", Arguments: map[string]string{"who": "bo"}})
	require.NoError(t, err)
	assert.Equal(t, "x_fake_greet for bo", prompt.Messages[0].Content.(*mcp.TextContent).Text)
}

// fakeProvider is a Provider with fixed tools.
type fakeProvider struct{ tools []*mcp.Tool }

func (p *fakeProvider) Tools() []*mcp.Tool { return p.tools }
func (p *fakeProvider) CallTool(_ context.Context, name string, args map[string]any, _ func(*mcp.ProgressNotificationParams)) (*mcp.CallToolResult, error) {
	data, _ := json.Marshal(args)
	return tooldef.Text(name + " ran with " + string(data)), nil
}

func sortedStrings(s []string) []string {
	out := append([]string(nil), s...)
	for i := range out {
		for j := i + 1; j < len(out); j++ {
			if out[j] < out[i] {
				out[i], out[j] = out[j], out[i]
			}
		}
	}
	return out
}
