package coretools

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"sigs.k8s.io/yaml"

	"github.com/musterd/musterd/pkg/api/shared"
	"github.com/musterd/musterd/pkg/api/types"
	"github.com/musterd/musterd/pkg/apis/muster/v1alpha1"
	"github.com/musterd/musterd/pkg/controls"
	"github.com/musterd/musterd/pkg/events"
	"github.com/musterd/musterd/pkg/identity"
	"github.com/musterd/musterd/pkg/redact"
	"github.com/musterd/musterd/pkg/resources"
	"github.com/musterd/musterd/pkg/tooldef"
)

// readTools returns the core tools that change nothing: views of the
// state the pipeline keeps, under muster's names and result shapes, and
// core_reconcile_status beyond muster.
func (p *Provider) readTools() []*tooldef.Tool {
	named := func(what string) []tooldef.Arg {
		return []tooldef.Arg{{Name: "name", Type: tooldef.String, Required: true, Description: "Name of the " + what + " (name, or namespace/name)"}}
	}
	return []*tooldef.Tool{
		{Name: "core_config_get", Description: "Get the current muster configuration", Call: p.configGet},
		{Name: "core_events", Description: "List and filter events for muster resources", Args: []tooldef.Arg{
			{Name: "resourceType", Type: tooldef.String, Description: "Filter by resource type (MCPServer, Workflow)"},
			{Name: "resourceName", Type: tooldef.String, Description: "Filter by resource name"},
			{Name: "namespace", Type: tooldef.String, Description: "Filter by namespace"},
			{Name: "eventType", Type: tooldef.String, Description: "Filter by event type (Normal, Warning)"},
			{Name: "since", Type: tooldef.String, Description: "Show events after this time (duration like '1h' or RFC3339 timestamp)"},
			{Name: "until", Type: tooldef.String, Description: "Show events before this time (RFC3339 timestamp)"},
			{Name: "limit", Type: tooldef.Number, Description: "Maximum number of events to return", Default: defaultEventLimit},
			{Name: "follow", Type: tooldef.Boolean, Description: "Stream new events as they occur (follow mode), as notifications/muster/event on the session's stream", Default: false},
		}, Call: p.coreEvents},
		{Name: "core_mcpserver_get", Description: "Get detailed information about a specific MCP server definition", Args: named("MCP server to retrieve"), Call: p.mcpserverGet},
		{Name: "core_mcpserver_list", Description: "List all MCP server definitions with their status. By default, failed servers are hidden.", Args: []tooldef.Arg{
			{Name: "showAll", Type: tooldef.Boolean, Description: "Show all servers including failed ones (default: false)"},
			{Name: "verbose", Type: tooldef.Boolean, Description: "Show detailed error information for failed servers (default: false)"},
		}, Call: p.mcpserverList},
		{Name: "core_reconcile_status", Description: "Show musterd's reconcile state of one resource (state, last error, retries, next retry, correlation ID), or, with no name, the overview (mode, leader or follower, enabled kinds, queue depth, resources and servers by state, last full resync, tool count) and every resource's state", Args: []tooldef.Arg{
			{Name: "kind", Type: tooldef.String, Description: "Resource kind (MCPServer, Workflow, or an alias such as mcpserver, wf); default: every kind"},
			{Name: "name", Type: tooldef.String, Description: "Resource name (name, or namespace/name); default: every resource"},
			{Name: "namespace", Type: tooldef.String, Description: "Only resources of this namespace"},
		}, Call: p.reconcileStatus},
		{Name: "core_service_list", Description: "List all services (the MCP servers musterd runs) with their current status", Call: p.serviceList},
		{Name: "core_service_status", Description: "Get status of a specific service", Args: []tooldef.Arg{
			{Name: "name", Type: tooldef.String, Required: true, Description: "Service name to get status for"},
		}, Call: p.serviceStatus},
		{Name: "core_workflow_available", Description: "Check whether a workflow is available: valid, with every tool it names offered", Args: named("workflow"), Call: p.workflowAvailable},
		{Name: "core_workflow_get", Description: "Get a workflow definition, with its YAML", Args: named("workflow"), Call: p.workflowGet},
		{Name: "core_workflow_list", Description: "List workflows with their availability", Args: []tooldef.Arg{
			{Name: "include_system", Type: tooldef.Boolean, Description: "Include system workflows (musterd has none; accepted for muster's CLI)"},
		}, Call: p.workflowList},
	}
}

// mode is core_mcpserver_list's "mode".
func (p *Provider) mode() string {
	if p.opts.Kubernetes {
		return "kubernetes"
	}
	return "filesystem"
}

// find returns the declared resource of kind that ref names: "name", or
// "namespace/name". A bare name declared in several namespaces is the one
// in "default" if there is one, else ambiguous.
func (p *Provider) find(kind, ref string) (resources.Entry, error) {
	namespace, name, qualified := strings.Cut(ref, "/")
	if !qualified {
		namespace, name = "", ref
	}
	var found []resources.Entry
	for _, e := range p.opts.Index.List(kind) {
		if e.Key.Name == name && (namespace == "" || e.Key.Namespace == namespace) {
			found = append(found, e)
		}
	}
	switch {
	case len(found) == 1:
		return found[0], nil
	case len(found) == 0:
		return resources.Entry{}, fmt.Errorf("%s %q not found", kind, ref)
	}
	for _, e := range found {
		if e.Key.Namespace == "default" {
			return e, nil
		}
	}
	var refs []string
	for _, e := range found {
		refs = append(refs, e.Key.Namespace+"/"+e.Key.Name)
	}
	return resources.Entry{}, fmt.Errorf("%s %q is declared in several namespaces (%s): name one as namespace/name", kind, ref, strings.Join(refs, ", "))
}

// sortedEntries lists kind's declared resources by name, then namespace.
func (p *Provider) sortedEntries(kind string) []resources.Entry {
	list := p.opts.Index.List(kind)
	slices.SortFunc(list, func(a, b resources.Entry) int {
		return cmp.Or(cmp.Compare(a.Key.Name, b.Key.Name), cmp.Compare(a.Key.Namespace, b.Key.Namespace))
	})
	return list
}

// serverInfo is an MCP server as muster's core_mcpserver_list and _get show
// it (muster's MCPServerInfo), with musterd's namespace beside its name.
// Env values and headers are redacted.
type serverInfo struct {
	Name                string                    `json:"name"`
	Namespace           string                    `json:"namespace,omitempty"`
	Type                string                    `json:"type"`
	Description         string                    `json:"description,omitempty"`
	AutoStart           bool                      `json:"autoStart,omitempty"`
	Command             string                    `json:"command,omitempty"`
	Args                []string                  `json:"args,omitempty"`
	URL                 string                    `json:"url,omitempty"`
	Env                 map[string]string         `json:"env,omitempty"`
	Headers             map[string]string         `json:"headers,omitempty"`
	Auth                *v1alpha1.MCPServerAuth   `json:"auth,omitempty"`
	Timeout             int                       `json:"timeout,omitempty"`
	ToolPrefix          string                    `json:"toolPrefix,omitempty"`
	Family              *v1alpha1.MCPServerFamily `json:"family,omitempty"`
	Error               string                    `json:"error,omitempty"`
	State               string                    `json:"state,omitempty"`
	StatusMessage       string                    `json:"statusMessage,omitempty"`
	ConsecutiveFailures int                       `json:"consecutiveFailures,omitempty"`
	LastAttempt         *time.Time                `json:"lastAttempt,omitempty"`
	NextRetryAfter      *time.Time                `json:"nextRetryAfter,omitempty"`
	ToolsCount          int                       `json:"toolsCount,omitempty"`
	ConnectedAt         *time.Time                `json:"connectedAt,omitempty"`
	// RegisteredBy is the user who created it through
	// core_mcpserver_create (RegisteredByAnnotation).
	RegisteredBy string `json:"registeredBy,omitempty"`
	// ProtocolVersion is the MCP generation musterd and the running server
	// agreed to (status.protocolVersion), in core_mcpserver_get only. A
	// musterd addition.
	ProtocolVersion string `json:"protocolVersion,omitempty"`
	// Warnings are the status's (status.warnings), in core_mcpserver_get
	// only: what of its file musterd ignored, a wrong exposure policy, the
	// tool names it exposes in conflict with another server. A musterd
	// addition.
	Warnings []string `json:"warnings,omitempty"`
}

// serverInfoOf shows e, an MCPServer entry, as ctx's caller stands with
// it; verbose keeps the last error.
func (p *Provider) serverInfoOf(ctx context.Context, e resources.Entry, verbose bool) serverInfo {
	info := serverInfo{Name: e.Key.Name, Namespace: e.Key.Namespace}
	if obj, ok := e.Object.(*v1alpha1.MCPServer); ok {
		spec := shared.RedactMCPServer(obj.Spec)
		info.Type, info.Description, info.AutoStart = string(spec.Type), spec.Description, spec.AutoStart
		info.Command, info.Args, info.URL = spec.Command, spec.Args, spec.URL
		info.Env, info.Headers, info.Auth, info.Timeout = spec.Env, spec.Headers, spec.Auth, spec.Timeout
		info.ToolPrefix, info.Family = spec.ToolPrefix, spec.Family
		info.RegisteredBy = obj.GetAnnotations()[RegisteredByAnnotation]
	}
	lastError, protocolVersion := "", ""
	var warnings []string
	if st, ok := p.mcpServerStatus(e.Key); ok {
		info.State = string(st.State)
		protocolVersion = st.ProtocolVersion
		warnings = st.Warnings
		info.ConsecutiveFailures = st.ConsecutiveFailures
		lastError = redact.String(st.LastError)
		if st.LastAttempt != nil {
			info.LastAttempt = &st.LastAttempt.Time
		}
		if st.NextRetryAfter != nil {
			info.NextRetryAfter = &st.NextRetryAfter.Time
		}
		if st.LastConnected != nil {
			info.ConnectedAt = &st.LastConnected.Time
		}
	}
	if info.State == string(v1alpha1.MCPServerStateAuthRequired) && p.callerConnected(ctx, e.Key) {
		// musterd holds no credential for it, but the caller's own
		// connection is up: to the caller it is connected, as muster
		// shows it once the caller's session has logged in to it.
		info.State, lastError = string(v1alpha1.MCPServerStateConnected), ""
	}
	if e.Object == nil && e.Err != nil {
		// Never a good definition: nothing runs, and the file says why.
		info.State = string(v1alpha1.MCPServerStateFailed)
		lastError = redact.String(e.Err.Error())
	}
	if p.opts.ServerTools != nil {
		info.ToolsCount = len(p.opts.ServerTools(e.Key))
	}
	info.StatusMessage = statusMessage(v1alpha1.MCPServerState(info.State), lastError)
	if verbose {
		info.Error = lastError
		info.ProtocolVersion = protocolVersion
		info.Warnings = warnings
	}
	return info
}

// callerConnected reports whether ctx's caller holds its own connection
// to the server at key (Options.Logins).
func (p *Provider) callerConnected(ctx context.Context, key events.Key) bool {
	who, ok := identity.From(ctx)
	return ok && p.opts.Logins != nil && p.opts.Logins.Connected(who.Owner(), key)
}

// mcpServerStatus is key's status as the MCPServer reconciler observed it.
func (p *Provider) mcpServerStatus(key events.Key) (v1alpha1.MCPServerStatus, bool) {
	if p.opts.ResourceStatus == nil {
		return v1alpha1.MCPServerStatus{}, false
	}
	raw, ok := p.opts.ResourceStatus(key)
	if !ok {
		return v1alpha1.MCPServerStatus{}, false
	}
	switch st := raw.(type) {
	case v1alpha1.MCPServerStatus:
		return st, true
	case *v1alpha1.MCPServerStatus:
		return *st, st != nil
	}
	return v1alpha1.MCPServerStatus{}, false
}

// statusMessage says in a few words what a state means for the user.
func statusMessage(state v1alpha1.MCPServerState, lastError string) string {
	switch state {
	case v1alpha1.MCPServerStateStarting, v1alpha1.MCPServerStateConnecting:
		return "Starting..."
	case v1alpha1.MCPServerStateAuthRequired:
		return "Authentication required"
	case v1alpha1.MCPServerStateFailed:
		if lastError == "" {
			return "Server failed to start"
		}
		return "Server failed: " + tooldef.Summary(lastError, tooldef.SummaryMaxRunes)
	}
	return ""
}

func (p *Provider) mcpserverList(ctx context.Context, a tooldef.Args) (*mcp.CallToolResult, error) {
	showAll, verbose := a.Bool("showAll", false), a.Bool("verbose", false)
	servers := []serverInfo{}
	hidden := 0
	for _, e := range p.sortedEntries(v1alpha1.KindMCPServer) {
		info := p.serverInfoOf(ctx, e, verbose)
		if info.State == string(v1alpha1.MCPServerStateFailed) && !showAll {
			hidden++
			continue
		}
		servers = append(servers, info)
	}
	result := map[string]any{"mcpServers": servers, "total": len(servers), "mode": p.mode()}
	if hidden > 0 {
		result["hiddenFailed"] = hidden
		result["hint"] = fmt.Sprintf("(%d failed servers hidden, use --all to show, --verbose for details)", hidden)
	}
	return tooldef.JSON(result)
}

func (p *Provider) mcpserverGet(ctx context.Context, a tooldef.Args) (*mcp.CallToolResult, error) {
	e, err := p.find(v1alpha1.KindMCPServer, a.Str("name"))
	if err != nil {
		return tooldef.Error("Failed to get MCP server: " + err.Error()), nil
	}
	return tooldef.JSON(p.serverInfoOf(ctx, e, true))
}

// serviceStatus is a managed server seen as a service, muster's shape.
type serviceStatus struct {
	Name        string         `json:"name"`
	ServiceType string         `json:"service_type"`
	State       string         `json:"state"`
	Health      string         `json:"health"`
	Error       string         `json:"error,omitempty"`
	Metadata    map[string]any `json:"metadata,omitempty"`
}

// serviceOf shows an MCP server as a service, as ctx's caller stands with
// it.
func (p *Provider) serviceOf(ctx context.Context, e resources.Entry) serviceStatus {
	info := p.serverInfoOf(ctx, e, true)
	st := serviceStatus{Name: info.Name, ServiceType: "MCPServer", Error: info.Error,
		Metadata: map[string]any{"namespace": info.Namespace, "toolsCount": info.ToolsCount}}
	if info.Type != "" {
		st.Metadata["type"] = info.Type
	}
	if info.ToolPrefix != "" {
		st.Metadata["toolPrefix"] = info.ToolPrefix
	}
	switch v1alpha1.MCPServerState(info.State) {
	case v1alpha1.MCPServerStateRunning:
		st.State, st.Health = "running", "healthy"
	case v1alpha1.MCPServerStateConnected:
		st.State, st.Health = "connected", "healthy"
	case v1alpha1.MCPServerStateStarting, v1alpha1.MCPServerStateConnecting:
		st.State, st.Health = "starting", "unknown"
	case v1alpha1.MCPServerStateStopped:
		st.State, st.Health = "stopped", "unknown"
	case v1alpha1.MCPServerStateDisconnected:
		st.State, st.Health = "disconnected", "unknown"
	case v1alpha1.MCPServerStateAuthRequired:
		st.State, st.Health = "auth_required", "unknown"
	case v1alpha1.MCPServerStateFailed:
		st.State, st.Health = "failed", "unhealthy"
	default:
		st.State, st.Health = "unknown", "unknown"
	}
	return st
}

func (p *Provider) serviceList(ctx context.Context, _ tooldef.Args) (*mcp.CallToolResult, error) {
	services := []serviceStatus{}
	for _, e := range p.sortedEntries(v1alpha1.KindMCPServer) {
		services = append(services, p.serviceOf(ctx, e))
	}
	return tooldef.JSON(map[string]any{"services": services, "total": len(services)})
}

func (p *Provider) serviceStatus(ctx context.Context, a tooldef.Args) (*mcp.CallToolResult, error) {
	e, err := p.find(v1alpha1.KindMCPServer, a.Str("name"))
	if err != nil {
		return tooldef.Error("Failed to get service status: " + strings.Replace(err.Error(), v1alpha1.KindMCPServer, "service", 1)), nil
	}
	return tooldef.JSON(p.serviceOf(ctx, e))
}

// workflowStatus is key's status as the Workflow reconciler observed it.
func (p *Provider) workflowStatus(key events.Key) (v1alpha1.WorkflowStatus, bool) {
	if p.opts.ResourceStatus == nil {
		return v1alpha1.WorkflowStatus{}, false
	}
	raw, ok := p.opts.ResourceStatus(key)
	if !ok {
		return v1alpha1.WorkflowStatus{}, false
	}
	switch st := raw.(type) {
	case v1alpha1.WorkflowStatus:
		return st, true
	case *v1alpha1.WorkflowStatus:
		return *st, st != nil
	}
	return v1alpha1.WorkflowStatus{}, false
}

// availability says whether the workflow at key can run, and which tools
// it needs that nothing offers: judged now (Options.WorkflowAvailability),
// as muster judges it at each call, or else the Workflow reconciler's last
// verdict. A workflow not reconciled yet is then not available.
func (p *Provider) availability(ctx context.Context, key events.Key) (bool, []string) {
	if p.opts.WorkflowAvailability != nil {
		caller, _ := identity.From(ctx)
		available, missing, _ := p.opts.WorkflowAvailability(key, caller.Owner())
		return available, missing
	}
	st, ok := p.workflowStatus(key)
	return ok && st.Valid, st.MissingTools
}

func (p *Provider) available(ctx context.Context, key events.Key) bool {
	ok, _ := p.availability(ctx, key)
	return ok
}

func (p *Provider) workflowList(ctx context.Context, _ tooldef.Args) (*mcp.CallToolResult, error) {
	type entry struct {
		Name        string `json:"name"`
		Available   bool   `json:"available"`
		Description string `json:"description,omitempty"`
	}
	list := []entry{}
	for _, e := range p.sortedEntries(v1alpha1.KindWorkflow) {
		w := entry{Name: e.Key.Name, Available: p.available(ctx, e.Key)}
		if obj, ok := e.Object.(*v1alpha1.Workflow); ok {
			w.Description = obj.Spec.Description
		}
		list = append(list, w)
	}
	return tooldef.JSON(map[string]any{"workflows": list})
}

func (p *Provider) workflowGet(ctx context.Context, a tooldef.Args) (*mcp.CallToolResult, error) {
	e, err := p.find(v1alpha1.KindWorkflow, a.Str("name"))
	if err != nil {
		return tooldef.Error("Failed to get workflow: " + err.Error()), nil
	}
	obj, ok := e.Object.(*v1alpha1.Workflow)
	if !ok {
		msg := "no valid definition"
		if e.Err != nil {
			msg = redact.String(e.Err.Error())
		}
		return tooldef.Error(fmt.Sprintf("Failed to get workflow: %s: %s", e.Key.Name, msg)), nil
	}
	spec, err := json.Marshal(obj.Spec)
	if err != nil {
		return nil, err
	}
	workflow := map[string]any{}
	if err := json.Unmarshal(spec, &workflow); err != nil {
		return nil, err
	}
	workflow["name"], workflow["namespace"] = e.Key.Name, e.Key.Namespace
	available, missing := p.availability(ctx, e.Key)
	workflow["available"] = available
	if len(missing) > 0 {
		workflow["missingTools"] = missing
	}
	doc, err := yaml.Marshal(map[string]any{
		"apiVersion": v1alpha1.APIVersion,
		"kind":       v1alpha1.KindWorkflow,
		"metadata":   map[string]any{"name": e.Key.Name, "namespace": e.Key.Namespace},
		"spec":       json.RawMessage(spec),
	})
	if err != nil {
		return nil, err
	}
	return tooldef.JSON(map[string]any{"workflow": workflow, "yaml": string(doc)})
}

func (p *Provider) workflowAvailable(ctx context.Context, a tooldef.Args) (*mcp.CallToolResult, error) {
	e, err := p.find(v1alpha1.KindWorkflow, a.Str("name"))
	if err != nil {
		return tooldef.Error("Failed to check workflow: " + err.Error()), nil
	}
	return tooldef.JSON(map[string]any{"name": e.Key.Name, "available": p.available(ctx, e.Key)})
}

// reconcileEntry is one resource's reconcile state.
type reconcileEntry struct {
	Kind      string `json:"kind"`
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	// Hash is the content hash of the definition in force.
	Hash string `json:"hash,omitempty"`
	types.Reconcile
	// Tools are, for a running MCPServer, how many tools it offers and
	// how many of them are exposed.
	Tools *controls.ToolCounts `json:"tools,omitempty"`
}

func (p *Provider) reconcileStatus(_ context.Context, a tooldef.Args) (*mcp.CallToolResult, error) {
	kind := ""
	if k := a.Str("kind"); k != "" {
		resolved, err := types.ResolveKind(k)
		if err != nil {
			return tooldef.Error("core_reconcile_status: " + err.Error()), nil
		}
		kind = resolved.Name
	}
	of := func(e resources.Entry) reconcileEntry {
		r := shared.ReconcileOf(p.opts.Statuses.Get(e.Key))
		if r.LastError == "" && e.Err != nil {
			r.LastError = redact.String(e.Err.Error())
		}
		entry := reconcileEntry{Kind: e.Key.Kind, Namespace: e.Key.Namespace, Name: e.Key.Name, Hash: e.Hash, Reconcile: r}
		if e.Key.Kind == v1alpha1.KindMCPServer && p.opts.ToolCounts != nil {
			if counts, running := p.opts.ToolCounts(e.Key); running {
				entry.Tools = &counts
			}
		}
		return entry
	}
	if ref := a.Str("name"); ref != "" {
		var found []resources.Entry
		kinds := []string{kind}
		if kind == "" {
			kinds = []string{v1alpha1.KindMCPServer, v1alpha1.KindWorkflow}
		}
		var lastErr error
		for _, k := range kinds {
			e, err := p.find(k, qualify(ref, a.Str("namespace")))
			if err != nil {
				lastErr = err
				continue
			}
			found = append(found, e)
		}
		switch len(found) {
		case 0:
			if kind == "" {
				return tooldef.Error(fmt.Sprintf("core_reconcile_status: no resource named %q is declared", ref)), nil
			}
			return tooldef.Error("core_reconcile_status: " + lastErr.Error()), nil
		case 1:
			return tooldef.JSON(of(found[0]))
		}
		return tooldef.Error(fmt.Sprintf("core_reconcile_status: %q names an MCPServer and a Workflow: give kind", ref)), nil
	}
	list := []reconcileEntry{}
	for _, e := range p.opts.Index.List(kind) {
		if ns := a.Str("namespace"); ns != "" && e.Key.Namespace != ns {
			continue
		}
		list = append(list, of(e))
	}
	slices.SortFunc(list, func(x, y reconcileEntry) int {
		return cmp.Or(cmp.Compare(x.Kind, y.Kind), cmp.Compare(x.Namespace, y.Namespace), cmp.Compare(x.Name, y.Name))
	})
	answer := map[string]any{"resources": list, "total": len(list)}
	if p.opts.Overview != nil {
		// The controls' overview, as the API and `musterd status` show it:
		// one source, never recomputed here.
		answer["overview"] = p.opts.Overview()
	}
	return tooldef.JSON(answer)
}

// qualify returns ref in namespace, unless ref names its own or namespace
// is empty.
func qualify(ref, namespace string) string {
	if namespace == "" || strings.Contains(ref, "/") {
		return ref
	}
	return namespace + "/" + ref
}
