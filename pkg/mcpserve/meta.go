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
)

// Discovery defaults of filter_tools, muster's.
const (
	defaultFilterLimit = 5
	summaryMaxRunes    = 120
)

// newMetaTools returns the eleven meta-tools of muster's view, with
// muster's names, arguments and result shapes.
func (s *Server) newMetaTools() []*builtin {
	name := func(what string) []arg {
		return []arg{{name: "name", typ: typeString, required: true, description: "Name of the " + what}}
	}
	uri := func(what string) []arg {
		return []arg{{name: "uri", typ: typeString, required: true, description: "URI of the resource to " + what}}
	}
	tools := []*builtin{
		{name: "list_tools", description: "List all available tools from connected MCP servers", call: s.listTools},
		{name: "describe_tool", description: "Get detailed information about a specific tool including its input schema", args: name("tool to describe"), call: s.describeTool},
		{name: "list_core_tools", description: "List core muster tools (built-in functionality separate from external MCP servers)", args: []arg{
			{name: "include_schema", typ: typeBoolean, description: "Whether to include full tool specifications with input schemas (default: true)", def: true},
		}, call: s.listCoreTools},
		{name: "filter_tools", description: "Discover tools cheaply: filter by name pattern, description, or labels, optionally rank by a natural-language query, and get a bounded, summarised page. Full descriptions and schemas are omitted by default — use describe_tool for the authoritative detail of a chosen tool.", args: []arg{
			{name: "pattern", typ: typeString, description: "Pattern to match against tool names (supports wildcards like *)"},
			{name: "description_filter", typ: typeString, description: "Filter by description content (case-insensitive substring match)"},
			{name: "query", typ: typeString, description: "Natural-language query. When set, matching tools are relevance-ranked and returned best-first with a score; non-matching tools are dropped."},
			{name: "labels", typ: typeObject, description: "Label facets to scope discovery, as key=value pairs. A tool must carry every given label to match."},
			{name: "case_sensitive", typ: typeBoolean, description: "Whether pattern matching should be case-sensitive (default: false)", def: false},
			{name: "include_schema", typ: typeBoolean, description: "Whether to include full input schemas and full descriptions instead of one-line summaries (default: false for cheap discovery)", def: false},
			{name: "limit", typ: typeNumber, description: "Maximum number of tools to return in this page (default: 5). Increase to page through more matches.", def: defaultFilterLimit},
			{name: "offset", typ: typeNumber, description: "Number of matching tools to skip before this page (default: 0)", def: 0},
		}, call: s.filterTools},
		{name: "call_tool", description: "Execute a tool with the given arguments", args: []arg{
			{name: "name", typ: typeString, required: true, description: "Name of the tool to call"},
			{name: "arguments", typ: typeObject, description: "Arguments to pass to the tool (as JSON object)"},
		}, call: s.callToolMeta},
		{name: "list_resources", description: "List all available resources from connected MCP servers", call: s.listResourcesMeta},
		{name: "describe_resource", description: "Get detailed information about a specific resource", args: uri("describe"), call: s.describeResource},
		{name: "get_resource", description: "Retrieve the contents of a resource", args: uri("retrieve"), call: s.getResource},
		{name: "list_prompts", description: "List all available prompts from connected MCP servers", call: s.listPromptsMeta},
		{name: "describe_prompt", description: "Get detailed information about a specific prompt", args: name("prompt to describe"), call: s.describePrompt},
		{name: "get_prompt", description: "Get a prompt with the given arguments", args: []arg{
			{name: "name", typ: typeString, required: true, description: "Name of the prompt to get"},
			{name: "arguments", typ: typeObject, description: "Arguments to pass to the prompt (as JSON object with string values)"},
		}, call: s.getPromptMeta},
	}
	for _, t := range tools {
		t.isMeta = true
	}
	return tools
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

// prettyResult is a text result of v as indented JSON, as muster's
// meta-tools answer.
func prettyResult(v any) (*mcp.CallToolResult, error) {
	data, err := marshal(v, true)
	if err != nil {
		return nil, err
	}
	return textResult(string(data)), nil
}

func (s *Server) listTools(context.Context, args) (*mcp.CallToolResult, error) {
	type entry struct {
		Name        string `json:"name"`
		Description string `json:"description"`
	}
	list := []entry{}
	for _, t := range s.Tools() {
		list = append(list, entry{t.Name, t.Description})
	}
	// musterd has no server needing a login: servers_requiring_auth, which
	// muster leaves out when empty, is never there.
	return prettyResult(struct {
		Tools []entry `json:"tools"`
	}{list})
}

func (s *Server) describeTool(_ context.Context, a args) (*mcp.CallToolResult, error) {
	name := a.str("name")
	for _, t := range s.Tools() {
		if t.Name == name {
			return prettyResult(map[string]any{"name": t.Name, "description": t.Description, "inputSchema": t.InputSchema})
		}
	}
	return errorResult("Tool not found: " + name), nil
}

// filterOptions is one discovery query.
type filterOptions struct {
	pattern, descriptionFilter, query string
	labels                            map[string]string
	caseSensitive, includeSchema      bool
	summarize                         bool
	limit, offset                     int // limit 0: no limit
}

func (s *Server) listCoreTools(ctx context.Context, a args) (*mcp.CallToolResult, error) {
	return s.filter(filterOptions{pattern: "core*", includeSchema: a.boolean("include_schema", true)})
}

func (s *Server) filterTools(_ context.Context, a args) (*mcp.CallToolResult, error) {
	o := filterOptions{
		pattern:           a.str("pattern"),
		descriptionFilter: a.str("description_filter"),
		query:             a.str("query"),
		caseSensitive:     a.boolean("case_sensitive", false),
		includeSchema:     a.boolean("include_schema", false),
		limit:             a.integer("limit", defaultFilterLimit),
		offset:            a.integer("offset", 0),
	}
	o.summarize = !o.includeSchema
	if labels := a.object("labels"); labels != nil {
		o.labels = map[string]string{}
		for k, v := range labels {
			o.labels[k] = fmt.Sprint(v)
		}
	}
	if o.limit < 1 {
		return errorResult("limit must be at least 1"), nil
	}
	if o.offset < 0 {
		return errorResult("offset must be at least 0"), nil
	}
	return s.filter(o)
}

// filter filters, ranks and pages the exposed tools.
func (s *Server) filter(o filterOptions) (*mcp.CallToolResult, error) {
	tools := s.Tools()
	if len(tools) == 0 {
		return textResult("No tools available to filter"), nil
	}
	if o.pattern != "" {
		if _, err := filepath.Match(o.pattern, ""); err != nil {
			return errorResult(fmt.Sprintf("Invalid pattern %q: %v", o.pattern, err)), nil
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
			docs[i] = t.Name + " " + summarize(t.Description, 0)
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
			info.Summary = summarize(st.tool.Description, summaryMaxRunes)
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
	return prettyResult(struct {
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

// summarize returns desc's first line, trimmed, cut to max runes (no cut
// when max is 0).
func summarize(desc string, max int) string {
	line, _, _ := strings.Cut(desc, "\n")
	line = strings.TrimSpace(line)
	if r := []rune(line); max > 0 && len(r) > max {
		line = strings.TrimSpace(string(r[:max])) + "..."
	}
	return line
}

// callToolMeta is call_tool: it calls the named tool and wraps its result in
// muster's envelope, one text item holding
// {"isError","content","structuredContent"}; the outer isError and
// structuredContent mirror the inner ones. A call that cannot be made at
// all is a plain error text, "Tool execution failed: …", without an
// envelope.
func (s *Server) callToolMeta(ctx context.Context, a args) (*mcp.CallToolResult, error) {
	var progress func(*mcp.ProgressNotificationParams)
	if p, ok := ctx.Value(progressKey{}).(func(*mcp.ProgressNotificationParams)); ok {
		progress = p
	}
	res, err := s.CallTool(ctx, a.str("name"), a.object("arguments"), progress)
	if err != nil {
		return errorResult("Tool execution failed: " + err.Error()), nil
	}
	envelope, err := marshal(struct {
		IsError           bool  `json:"isError"`
		Content           []any `json:"content"`
		StructuredContent any   `json:"structuredContent,omitempty"`
	}{res.IsError, serializeContent(res.Content), res.StructuredContent}, false)
	if err != nil {
		return errorResult("Failed to serialize result: " + err.Error()), nil
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

func (s *Server) listResourcesMeta(context.Context, args) (*mcp.CallToolResult, error) {
	list := s.listResources()
	if len(list) == 0 {
		return textResult("No resources available"), nil
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
	return prettyResult(out)
}

func (s *Server) describeResource(_ context.Context, a args) (*mcp.CallToolResult, error) {
	uri := a.str("uri")
	for _, r := range s.listResources() {
		if r.URI == uri {
			return prettyResult(map[string]any{"uri": r.URI, "name": r.Name, "description": r.Description, "mimeType": r.MIMEType})
		}
	}
	return errorResult("Resource not found: " + uri), nil
}

func (s *Server) getResource(ctx context.Context, a args) (*mcp.CallToolResult, error) {
	if s.opts.Backend == nil {
		return errorResult("Resource retrieval failed: no MCP server runs"), nil
	}
	res, err := s.opts.Backend.ReadResource(ctx, a.str("uri"))
	if err != nil {
		return errorResult("Resource retrieval failed: " + err.Error()), nil
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
	return textResult(strings.Join(texts, "\n")), nil
}

func (s *Server) listPromptsMeta(context.Context, args) (*mcp.CallToolResult, error) {
	list := s.listPrompts()
	if len(list) == 0 {
		return textResult("No prompts available"), nil
	}
	type info struct {
		Name        string `json:"name"`
		Description string `json:"description"`
	}
	out := make([]info, len(list))
	for i, p := range list {
		out[i] = info{p.Name, p.Description}
	}
	return prettyResult(out)
}

func (s *Server) describePrompt(_ context.Context, a args) (*mcp.CallToolResult, error) {
	name := a.str("name")
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
		return prettyResult(info)
	}
	return errorResult("Prompt not found: " + name), nil
}

func (s *Server) getPromptMeta(ctx context.Context, a args) (*mcp.CallToolResult, error) {
	if s.opts.Backend == nil {
		return errorResult("Prompt retrieval failed: no MCP server runs"), nil
	}
	promptArgs := map[string]string{}
	for k, v := range a.object("arguments") {
		if str, ok := v.(string); ok {
			promptArgs[k] = str
		} else {
			promptArgs[k] = fmt.Sprint(v)
		}
	}
	res, err := s.opts.Backend.GetPrompt(ctx, a.str("name"), promptArgs)
	if err != nil {
		return errorResult("Prompt retrieval failed: " + err.Error()), nil
	}
	type message struct {
		Role    mcp.Role `json:"role"`
		Content any      `json:"content"`
	}
	out := make([]message, len(res.Messages))
	for i, m := range res.Messages {
		out[i] = message{Role: m.Role, Content: promptContent(m.Content)}
	}
	return prettyResult(out)
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
