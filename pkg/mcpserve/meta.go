package mcpserve

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"path/filepath"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/musterd/musterd/pkg/apis/muster/v1alpha1"
	"github.com/musterd/musterd/pkg/tooldef"
)

// Discovery defaults of filter_tools, muster's.
const (
	defaultFilterLimit = 5
)

// newMetaTools returns the eleven meta-tools of muster's view, with
// muster's names, arguments and result shapes.
func (s *Server) newMetaTools() []*tooldef.Tool {
	name := func(what string) []tooldef.Arg {
		return []tooldef.Arg{{Name: "name", Type: tooldef.String, Required: true, Description: "Name of the " + what}}
	}
	uri := func(what string) []tooldef.Arg {
		return []tooldef.Arg{{Name: "uri", Type: tooldef.String, Required: true, Description: "URI of the resource to " + what}}
	}
	return []*tooldef.Tool{
		{Name: "list_tools", Description: "List all available tools from connected MCP servers", Call: s.listTools},
		{Name: "describe_tool", Description: "Get detailed information about a specific tool including its input schema", Args: name("tool to describe"), Call: s.describeTool},
		{Name: "list_core_tools", Description: "List core muster tools (built-in functionality separate from external MCP servers)", Args: []tooldef.Arg{
			{Name: "include_schema", Type: tooldef.Boolean, Description: "Whether to include full tool specifications with input schemas (default: true)", Default: true},
		}, Call: s.listCoreTools},
		{Name: "filter_tools", Description: "Discover tools cheaply: filter by name pattern, description, or labels, optionally rank by a natural-language query, and get a bounded, summarised page. Full descriptions and schemas are omitted by default — use describe_tool for the authoritative detail of a chosen tool.", Args: []tooldef.Arg{
			{Name: "pattern", Type: tooldef.String, Description: "Pattern to match against tool names (supports wildcards like *)"},
			{Name: "description_filter", Type: tooldef.String, Description: "Filter by description content (case-insensitive substring match)"},
			{Name: "query", Type: tooldef.String, Description: "Natural-language query. When set, matching tools are relevance-ranked and returned best-first with a score; non-matching tools are dropped."},
			{Name: "labels", Type: tooldef.Object, Description: "Label facets to scope discovery, as key=value pairs. A tool must carry every given label to match."},
			{Name: "case_sensitive", Type: tooldef.Boolean, Description: "Whether pattern matching should be case-sensitive (default: false)", Default: false},
			{Name: "include_schema", Type: tooldef.Boolean, Description: "Whether to include full input schemas and full descriptions instead of one-line summaries (default: false for cheap discovery)", Default: false},
			{Name: "limit", Type: tooldef.Number, Description: "Maximum number of tools to return in this page (default: 5). Increase to page through more matches.", Default: defaultFilterLimit},
			{Name: "offset", Type: tooldef.Number, Description: "Number of matching tools to skip before this page (default: 0)", Default: 0},
		}, Call: s.filterTools},
		{Name: "call_tool", Description: "Execute a tool with the given arguments", Args: []tooldef.Arg{
			{Name: "name", Type: tooldef.String, Required: true, Description: "Name of the tool to call"},
			{Name: "arguments", Type: tooldef.Object, Description: "Arguments to pass to the tool (as JSON object)"},
		}, Call: s.callToolMeta},
		{Name: "list_resources", Description: "List all available resources from connected MCP servers", Call: s.listResourcesMeta},
		{Name: "describe_resource", Description: "Get detailed information about a specific resource", Args: uri("describe"), Call: s.describeResource},
		{Name: "get_resource", Description: "Retrieve the contents of a resource", Args: uri("retrieve"), Call: s.getResource},
		{Name: "list_prompts", Description: "List all available prompts from connected MCP servers", Call: s.listPromptsMeta},
		{Name: "describe_prompt", Description: "Get detailed information about a specific prompt", Args: name("prompt to describe"), Call: s.describePrompt},
		{Name: "get_prompt", Description: "Get a prompt with the given arguments", Args: []tooldef.Arg{
			{Name: "name", Type: tooldef.String, Required: true, Description: "Name of the prompt to get"},
			{Name: "arguments", Type: tooldef.Object, Description: "Arguments to pass to the prompt (as JSON object with string values)"},
		}, Call: s.getPromptMeta},
	}
}

// toolInfo is a tool as the discovery meta-tools show it.
type toolInfo struct {
	Name        string            `json:"name"`
	Description string            `json:"description,omitempty"`
	Summary     string            `json:"summary,omitempty"`
	Score       float64           `json:"score,omitempty"`
	Labels      map[string]string `json:"labels,omitempty"`
	InputSchema any               `json:"inputSchema,omitempty"`
}

func (s *Server) listTools(ctx context.Context, _ tooldef.Args) (*mcp.CallToolResult, error) {
	type entry struct {
		Name        string `json:"name"`
		Description string `json:"description"`
	}
	list := []entry{}
	for _, t := range s.toolsFor(ctx) {
		list = append(list, entry{t.Name, t.Description})
	}
	// musterd has no server needing a login: servers_requiring_auth, which
	// muster leaves out when empty, is never there.
	return tooldef.Pretty(struct {
		Tools []entry `json:"tools"`
	}{list})
}

func (s *Server) describeTool(ctx context.Context, a tooldef.Args) (*mcp.CallToolResult, error) {
	name := a.Str("name")
	for _, t := range s.toolsFor(ctx) {
		if t.Name == name {
			return tooldef.Pretty(map[string]any{"name": t.Name, "description": t.Description, "inputSchema": t.InputSchema})
		}
	}
	return tooldef.Error("Tool not found: " + name), nil
}

// filterOptions is one discovery query.
type filterOptions struct {
	pattern, descriptionFilter, query string
	labels                            map[string]string
	caseSensitive, includeSchema      bool
	summarize                         bool
	limit, offset                     int // limit 0: no limit
}

func (s *Server) listCoreTools(ctx context.Context, a tooldef.Args) (*mcp.CallToolResult, error) {
	return s.filter(ctx, filterOptions{pattern: "core*", includeSchema: a.Bool("include_schema", true)})
}

func (s *Server) filterTools(ctx context.Context, a tooldef.Args) (*mcp.CallToolResult, error) {
	o := filterOptions{
		pattern:           a.Str("pattern"),
		descriptionFilter: a.Str("description_filter"),
		query:             a.Str("query"),
		caseSensitive:     a.Bool("case_sensitive", false),
		includeSchema:     a.Bool("include_schema", false),
		limit:             a.Int("limit", defaultFilterLimit),
		offset:            a.Int("offset", 0),
	}
	o.summarize = !o.includeSchema
	if labels := a.Object("labels"); labels != nil {
		o.labels = map[string]string{}
		for k, v := range labels {
			o.labels[k] = fmt.Sprint(v)
		}
	}
	if o.limit < 1 {
		return tooldef.Error("limit must be at least 1"), nil
	}
	if o.offset < 0 {
		return tooldef.Error("offset must be at least 0"), nil
	}
	return s.filter(ctx, o)
}

// filter filters, ranks and pages the exposed tools.
func (s *Server) filter(ctx context.Context, o filterOptions) (*mcp.CallToolResult, error) {
	tools := s.toolsFor(ctx)
	if len(tools) == 0 {
		return tooldef.Text("No tools available to filter"), nil
	}
	if o.pattern != "" {
		if _, err := filepath.Match(o.pattern, ""); err != nil {
			return tooldef.Error(fmt.Sprintf("Invalid pattern %q: %v", o.pattern, err)), nil
		}
	}
	fold := func(x string) string {
		if o.caseSensitive {
			return x
		}
		return strings.ToLower(x)
	}
	var matched []*mcp.Tool
	for _, t := range tools {
		if o.pattern != "" {
			if ok, _ := filepath.Match(fold(o.pattern), fold(t.Name)); !ok {
				continue
			}
		}
		if o.descriptionFilter != "" && !strings.Contains(fold(t.Description), fold(o.descriptionFilter)) {
			continue
		}
		if !hasLabels(t, o.labels) {
			continue
		}
		matched = append(matched, t)
	}
	type scored struct {
		tool   *mcp.Tool
		score  float64
		scored bool
	}
	var ordered []scored
	if o.query != "" {
		docs := make([]string, len(matched))
		for i, t := range matched {
			docs[i] = t.Name + " " + tooldef.Summary(t.Description, 0)
		}
		for _, r := range rank(o.query, docs) {
			ordered = append(ordered, scored{matched[r.index], r.score, true})
		}
	} else {
		for _, t := range matched {
			ordered = append(ordered, scored{tool: t})
		}
	}
	total := len(ordered)
	start := min(o.offset, total)
	end := total
	if o.limit > 0 && start+o.limit < end {
		end = start + o.limit
	}
	infos := []toolInfo{}
	for _, st := range ordered[start:end] {
		info := toolInfo{Name: st.tool.Name}
		if o.summarize {
			info.Summary = tooldef.Summary(st.tool.Description, tooldef.SummaryMaxRunes)
		} else {
			info.Description = st.tool.Description
		}
		if st.scored {
			info.Score = math.Max(math.Round(st.score*10000)/10000, 0.0001)
		}
		info.Labels = labelsOf(st.tool)
		if o.includeSchema {
			info.InputSchema = st.tool.InputSchema
		}
		infos = append(infos, info)
	}
	type criteria struct {
		Pattern           string            `json:"pattern,omitempty"`
		DescriptionFilter string            `json:"description_filter,omitempty"`
		Query             string            `json:"query,omitempty"`
		Labels            map[string]string `json:"labels,omitempty"`
		CaseSensitive     bool              `json:"case_sensitive"`
		IncludeSchema     bool              `json:"include_schema"`
		Limit             int               `json:"limit"`
		Offset            int               `json:"offset"`
	}
	return tooldef.Pretty(struct {
		Filters       criteria   `json:"filters"`
		TotalTools    int        `json:"total_tools"`
		FilteredCount int        `json:"filtered_count"`
		Total         int        `json:"total"`
		Truncated     bool       `json:"truncated"`
		Tools         []toolInfo `json:"tools"`
	}{
		Filters:    criteria{o.pattern, o.descriptionFilter, o.query, o.labels, o.caseSensitive, o.includeSchema, o.limit, o.offset},
		TotalTools: len(tools), FilteredCount: len(infos), Total: total, Truncated: end < total, Tools: infos,
	})
}

// labelsOf returns the discovery labels in t's _meta
// (v1alpha1.MetaKeyLabels, muster's key), if any.
func labelsOf(t *mcp.Tool) map[string]string {
	switch m := t.Meta[v1alpha1.MetaKeyLabels].(type) {
	case map[string]string:
		return maps.Clone(m)
	case map[string]any:
		out := make(map[string]string, len(m))
		for k, v := range m {
			out[k] = fmt.Sprint(v)
		}
		return out
	}
	return nil
}

func hasLabels(t *mcp.Tool, want map[string]string) bool {
	if len(want) == 0 {
		return true
	}
	have := labelsOf(t)
	for k, v := range want {
		if have[k] != v {
			return false
		}
	}
	return true
}

// callToolMeta is call_tool: it calls the named tool and wraps its result in
// muster's envelope, one text item holding
// {"isError","content","structuredContent"}; the outer isError and
// structuredContent mirror the inner ones. A call that cannot be made at
// all is a plain error text, "Tool execution failed: …", without an
// envelope.
func (s *Server) callToolMeta(ctx context.Context, a tooldef.Args) (*mcp.CallToolResult, error) {
	var progress func(*mcp.ProgressNotificationParams)
	if p, ok := ctx.Value(progressKey{}).(func(*mcp.ProgressNotificationParams)); ok {
		progress = p
	}
	res, err := s.opts.Backend.CallTool(ctx, a.Str("name"), a.Object("arguments"), progress)
	if err != nil {
		return tooldef.Error("Tool execution failed: " + err.Error()), nil
	}
	envelope, err := tooldef.Marshal(struct {
		IsError           bool  `json:"isError"`
		Content           []any `json:"content"`
		StructuredContent any   `json:"structuredContent,omitempty"`
	}{res.IsError, serializeContent(res.Content), res.StructuredContent}, false)
	if err != nil {
		return tooldef.Error("Failed to serialize result: " + err.Error()), nil
	}
	return &mcp.CallToolResult{
		Content:           []mcp.Content{&mcp.TextContent{Text: string(envelope)}},
		IsError:           res.IsError,
		StructuredContent: res.StructuredContent,
	}, nil
}

type progressKey struct{}

// serializeContent spells content for the envelope as muster does: text
// whole, images and audio by type, MIME type and size, anything else as
// its JSON.
func serializeContent(content []mcp.Content) []any {
	out := make([]any, 0, len(content))
	for _, c := range content {
		switch c := c.(type) {
		case *mcp.TextContent:
			out = append(out, map[string]any{"type": "text", "text": c.Text})
		case *mcp.ImageContent:
			out = append(out, map[string]any{"type": "image", "mimeType": c.MIMEType, "dataSize": len(c.Data)})
		case *mcp.AudioContent:
			out = append(out, map[string]any{"type": "audio", "mimeType": c.MIMEType, "dataSize": len(c.Data)})
		default:
			data, err := json.Marshal(c)
			if err != nil {
				out = append(out, map[string]any{"type": "unknown", "error": err.Error()})
				continue
			}
			out = append(out, json.RawMessage(data))
		}
	}
	return out
}

func (s *Server) listResourcesMeta(context.Context, tooldef.Args) (*mcp.CallToolResult, error) {
	list := s.listResources()
	if len(list) == 0 {
		return tooldef.Text("No resources available"), nil
	}
	type info struct {
		URI         string `json:"uri"`
		Name        string `json:"name"`
		Description string `json:"description,omitempty"`
		MIMEType    string `json:"mimeType,omitempty"`
	}
	out := make([]info, len(list))
	for i, r := range list {
		out[i] = info{r.URI, r.Name, cmpOr(r.Description, r.Name), r.MIMEType}
	}
	return tooldef.Pretty(out)
}

func (s *Server) describeResource(_ context.Context, a tooldef.Args) (*mcp.CallToolResult, error) {
	uri := a.Str("uri")
	for _, r := range s.listResources() {
		if r.URI == uri {
			return tooldef.Pretty(map[string]any{"uri": r.URI, "name": r.Name, "description": r.Description, "mimeType": r.MIMEType})
		}
	}
	return tooldef.Error("Resource not found: " + uri), nil
}

func (s *Server) getResource(ctx context.Context, a tooldef.Args) (*mcp.CallToolResult, error) {
	res, err := s.opts.Backend.ReadResource(ctx, a.Str("uri"))
	if err != nil {
		return tooldef.Error("Resource retrieval failed: " + err.Error()), nil
	}
	var texts []string
	for _, c := range res.Contents {
		if c == nil {
			continue
		}
		if c.Blob != nil {
			texts = append(texts, fmt.Sprintf("[Binary data: %d bytes]", len(c.Blob)))
		} else {
			texts = append(texts, c.Text)
		}
	}
	return tooldef.Text(strings.Join(texts, "\n")), nil
}

func (s *Server) listPromptsMeta(context.Context, tooldef.Args) (*mcp.CallToolResult, error) {
	list := s.listPrompts()
	if len(list) == 0 {
		return tooldef.Text("No prompts available"), nil
	}
	type info struct {
		Name        string `json:"name"`
		Description string `json:"description"`
	}
	out := make([]info, len(list))
	for i, p := range list {
		out[i] = info{p.Name, p.Description}
	}
	return tooldef.Pretty(out)
}

func (s *Server) describePrompt(_ context.Context, a tooldef.Args) (*mcp.CallToolResult, error) {
	name := a.Str("name")
	for _, p := range s.listPrompts() {
		if p.Name != name {
			continue
		}
		info := map[string]any{"name": p.Name, "description": p.Description}
		if len(p.Arguments) > 0 {
			list := make([]map[string]any, len(p.Arguments))
			for i, pa := range p.Arguments {
				list[i] = map[string]any{"name": pa.Name, "description": pa.Description, "required": pa.Required}
			}
			info["arguments"] = list
		}
		return tooldef.Pretty(info)
	}
	return tooldef.Error("Prompt not found: " + name), nil
}

func (s *Server) getPromptMeta(ctx context.Context, a tooldef.Args) (*mcp.CallToolResult, error) {
	promptArgs := map[string]string{}
	for k, v := range a.Object("arguments") {
		if str, ok := v.(string); ok {
			promptArgs[k] = str
		} else {
			promptArgs[k] = fmt.Sprint(v)
		}
	}
	res, err := s.opts.Backend.GetPrompt(ctx, a.Str("name"), promptArgs)
	if err != nil {
		return tooldef.Error("Prompt retrieval failed: " + err.Error()), nil
	}
	type message struct {
		Role    mcp.Role `json:"role"`
		Content any      `json:"content"`
	}
	out := make([]message, len(res.Messages))
	for i, m := range res.Messages {
		out[i] = message{Role: m.Role, Content: promptContent(m.Content)}
	}
	return tooldef.Pretty(out)
}

// promptContent spells a prompt message's content as muster does.
func promptContent(c mcp.Content) any {
	switch c := c.(type) {
	case *mcp.TextContent:
		return map[string]any{"type": "text", "text": c.Text}
	case *mcp.ImageContent:
		return map[string]any{"type": "image", "mimeType": c.MIMEType, "dataSize": len(c.Data)}
	case *mcp.AudioContent:
		return map[string]any{"type": "audio", "mimeType": c.MIMEType, "dataSize": len(c.Data)}
	case *mcp.EmbeddedResource:
		return map[string]any{"type": "embeddedResource", "resource": c.Resource}
	}
	return c
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
