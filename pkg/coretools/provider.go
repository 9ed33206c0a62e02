package coretools

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/musterd/musterd/pkg/apis/muster/v1alpha1"
	"github.com/musterd/musterd/pkg/controls"
	"github.com/musterd/musterd/pkg/declare"
	"github.com/musterd/musterd/pkg/events"
	"github.com/musterd/musterd/pkg/resources"
	"github.com/musterd/musterd/pkg/statusync"
	"github.com/musterd/musterd/pkg/tooldef"
)

// Options configures a Provider. Index and Statuses are required; without
// Store and Controls the tools that change definitions and services are
// not offered.
type Options struct {
	// Store changes the definitions. Default: none, and the tools that
	// change definitions are not offered.
	Store declare.Store
	// StoreTimeout bounds each call of Store (a Kubernetes API server or
	// a disk that hangs fails the tool call, naming the store, rather
	// than holding it). Default DefaultStoreTimeout (30s).
	StoreTimeout time.Duration
	// Index is what the watchers read, which the read tools show: a
	// change is in force once it holds it. Required.
	Index *resources.Index
	// Statuses is the status store, read by wait: true and
	// core_reconcile_status. Required.
	Statuses interface {
		Get(events.Key) (statusync.Status, bool)
	}
	// Controls start, stop and restart services. Default: none, and
	// core_service_start, _stop and _restart are not offered.
	Controls *controls.Controller
	// ResourceStatus returns a resource's status in the v1alpha1 schema as
	// its reconciler last observed it (reconcilers.Registry.Status).
	// Default: none, and servers show no state.
	ResourceStatus func(events.Key) (any, bool)
	// WorkflowAvailability judges a workflow's availability now: whether
	// every tool it needs, through the workflows it calls at any depth,
	// is offered at this moment, and which are not
	// (workflow.Reconciler.Availability), as muster answers
	// core_workflow_available, core_workflow_list and core_workflow_get.
	// found is false when no workflow is declared at the key. Default:
	// none, and a workflow is available when the Workflow reconciler's
	// last verdict (ResourceStatus) found it valid.
	WorkflowAvailability func(events.Key) (available bool, missingTools []string, found bool)
	// ServerTools returns the names of a running server's own tools
	// (supervisor.Observed.Tools), for toolsCount. Default: none, and
	// toolsCount is left out.
	ServerTools func(events.Key) []string
	// Events is muster's view of the events (musterevents.Log), which
	// core_events lists and follows. Default: none, and core_events lists
	// nothing and refuses to follow.
	Events EventLog
	// Overview returns the daemon at a glance (controls.Controller.Overview,
	// what GET /api/v1/overview answers), which core_reconcile_status shows
	// when asked for no one resource. Default: none, and it shows only the
	// resources' reconcile states.
	Overview func() controls.Overview
	// ToolCounts returns how many tools a running server offers and how
	// many of them are exposed, for core_reconcile_status of one
	// MCPServer. Default: none, and they are left out.
	ToolCounts func(events.Key) (controls.ToolCounts, bool)
	// Config returns the daemon's configuration as core_config_get shows
	// it: muster's MusterConfig as muster encodes it. Default: none, and
	// core_config_get answers an empty object.
	Config func() any
	// Executions are the workflow executions core_workflow_execution_list
	// and _get show (*workflowrun.Engine). Default: none, and those tools
	// are not offered.
	Executions Executions
	// Kubernetes says the resources come from custom resources: the "mode"
	// core_mcpserver_list reports. Default false: "filesystem".
	Kubernetes bool
	// Namespace is where definitions are made: "default" in filesystem
	// mode, the watched namespace in Kubernetes mode. Default "default".
	Namespace string
	// InForceTimeout bounds the wait for a change to be in force, and
	// WaitTimeout the wait for its reconcile (wait: true). Defaults 30s
	// and 5m30s (the daemon's reconcile timeout).
	InForceTimeout, WaitTimeout time.Duration
	// Poll is how often the index and status store are read while
	// waiting. Default 20ms.
	Poll time.Duration
	// Logins are the users' logins to protected servers, which
	// core_auth_login and core_auth_logout drive (auth.go). Default: none,
	// and the tools answer as muster does without its OAuth proxy.
	Logins Logins
	// Publish receives an events.DefinitionValidated for every check of a
	// definition: the validate tools', and a create's or update's (invalid,
	// or valid and written); the wiring puts it on the bus. It must not
	// block. Default: none.
	Publish func(events.Event)
	// Logger defaults to slog.Default().
	Logger *slog.Logger
}

// Provider serves the core tools, read and write. It is a router.Source.
type Provider struct {
	opts    Options
	log     *slog.Logger
	tools   []*mcp.Tool
	byName  map[string]*tooldef.Tool
	follows follows // events.go
}

// New returns the provider.
func New(opts Options) (*Provider, error) {
	if opts.Index == nil || opts.Statuses == nil {
		return nil, errors.New("coretools: Index and Statuses are required")
	}
	opts.Namespace = cmp.Or(opts.Namespace, events.DefaultNamespace)
	opts.InForceTimeout = cmp.Or(opts.InForceTimeout, 30*time.Second)
	opts.WaitTimeout = cmp.Or(opts.WaitTimeout, 5*time.Minute+30*time.Second)
	opts.Poll = cmp.Or(opts.Poll, 20*time.Millisecond)
	opts.StoreTimeout = cmp.Or(opts.StoreTimeout, DefaultStoreTimeout)
	if opts.Store != nil {
		opts.Store = boundedStore{Store: opts.Store, timeout: opts.StoreTimeout}
	}
	p := &Provider{opts: opts, log: cmp.Or(opts.Logger, slog.Default()).With("component", "coretools"), byName: map[string]*tooldef.Tool{}}
	all := append(p.readTools(), p.authTools()...) // read.go, auth.go
	if opts.Store != nil {
		all = append(all, p.definitionTools()...) // schema.go
	}
	if opts.Controls != nil {
		all = append(all, p.serviceTools()...) // schema.go
	}
	if opts.Executions != nil {
		all = append(all, p.executionTools()...) // executions.go
	}
	slices.SortFunc(all, func(a, b *tooldef.Tool) int { return strings.Compare(a.Name, b.Name) })
	for _, t := range all {
		p.tools = append(p.tools, t.Definition())
		p.byName[t.Name] = t
	}
	return p, nil
}

// Tools returns the tools' definitions, sorted by name: the same
// *mcp.Tool values from call to call.
func (p *Provider) Tools() []*mcp.Tool { return p.tools }

// Has reports whether name is one of the tools.
func (p *Provider) Has(name string) bool {
	_, ok := p.byName[name]
	return ok
}

// CallTool calls one of the tools; arguments of the wrong type for a read
// tool are its error result naming them.
func (p *Provider) CallTool(ctx context.Context, name string, args map[string]any, _ func(*mcp.ProgressNotificationParams)) (*mcp.CallToolResult, error) {
	t, ok := p.byName[name]
	if !ok {
		return nil, fmt.Errorf("unknown tool: %s", name)
	}
	return t.Invoke(ctx, args)
}

// The answers of the tools that change things: muster's plain texts.
var (
	text = tooldef.Text
	fail = tooldef.Error
)

// args is a call's arguments as the tools read them.
type args struct {
	m map[string]any
}

// name returns the required name, or the error answer.
func (a args) name() (string, *mcp.CallToolResult) {
	v, ok := a.m["name"]
	if !ok {
		return "", fail("name is required")
	}
	s, ok := v.(string)
	if !ok || s == "" {
		return "", fail(fmt.Sprintf("name must be a non-empty string, not %s", typeName(v)))
	}
	return s, nil
}

func (a args) str(k string) (string, *mcp.CallToolResult) {
	v, ok := a.m[k]
	if !ok || v == nil {
		return "", nil
	}
	s, ok := v.(string)
	if !ok {
		return "", fail(fmt.Sprintf("%s must be a string, not %s", k, typeName(v)))
	}
	return s, nil
}

func (a args) flag(k string) (bool, *mcp.CallToolResult) {
	v, ok := a.m[k]
	if !ok || v == nil {
		return false, nil
	}
	b, ok := v.(bool)
	if !ok {
		return false, fail(fmt.Sprintf("%s must be a boolean, not %s", k, typeName(v)))
	}
	return b, nil
}

func typeName(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case string:
		return "a string"
	case bool:
		return "a boolean"
	case float64, int, int64:
		return "a number"
	case []any:
		return "an array"
	case map[string]any:
		return "an object"
	}
	return fmt.Sprintf("%T", v)
}

// spec is the call's arguments other than those of the tool itself:
// every one goes into the spec, so that the file decoder names those it
// does not know.
func (a args) spec(reserved ...string) map[string]any {
	spec := map[string]any{}
	for k, v := range a.m {
		skip := k == "name" || k == "wait" || k == "resourceVersion"
		for _, r := range reserved {
			skip = skip || k == r
		}
		if !skip {
			spec[k] = v
		}
	}
	return spec
}

func (p *Provider) key(kind, name string) events.Key {
	return events.NewKey(kind, p.opts.Namespace, name)
}

// inForce waits until the index holds def (or, with deleted, holds key no
// more). It reports whether it does within InForceTimeout.
func (p *Provider) inForce(ctx context.Context, key events.Key, def declare.Definition, deleted bool) bool {
	return p.poll(ctx, p.opts.InForceTimeout, func() bool {
		e, ok := p.opts.Index.Get(key)
		switch {
		case deleted:
			return !ok
		case !ok:
			return false
		case def.UID != "":
			o, isObj := e.Object.(v1alpha1.Object)
			return isObj && string(o.GetUID()) == def.UID && o.GetGeneration() >= def.Generation
		}
		return e.Hash == def.Hash
	})
}

// reconciled waits until key's reconcile covers what the index holds now,
// Synced or Failed (or, with deleted, until its status is gone), and
// returns the state; "" if it does not within WaitTimeout. A failure
// counts only if its reconcile ended after since.
func (p *Provider) reconciled(ctx context.Context, key events.Key, deleted bool, since time.Time) string {
	hash := p.opts.Index.Hash(key)
	state := ""
	p.poll(ctx, p.opts.WaitTimeout, func() bool {
		st, ok := p.opts.Statuses.Get(key)
		switch {
		case deleted:
			if !ok {
				state = "Deleted"
			}
			return !ok
		case !ok:
			return false
		case st.State == statusync.StateSynced && st.ObservedHash == hash,
			// A failure of a reconcile that ended before the change was
			// made is not this change's.
			st.State == statusync.StateFailed && !st.LastReconcileTime.Before(since):
			state = string(st.State)
			return true
		}
		return false
	})
	return state
}

func (p *Provider) poll(ctx context.Context, limit time.Duration, cond func() bool) bool {
	deadline := time.NewTimer(limit)
	defer deadline.Stop()
	tick := time.NewTicker(p.opts.Poll)
	defer tick.Stop()
	for !cond() {
		select {
		case <-ctx.Done():
			return false
		case <-deadline.C:
			return cond()
		case <-tick.C:
		}
	}
	return true
}

// settled completes a success text: once the change is in force, and with
// wait once it is reconciled, saying so.
func (p *Provider) settled(ctx context.Context, a args, key events.Key, def declare.Definition, deleted bool, since time.Time, msg string) *mcp.CallToolResult {
	if !p.inForce(ctx, key, def, deleted) {
		return text(fmt.Sprintf("%s (written to %s; not in force yet after %s: is musterd watching it?)", msg, def.Where, p.opts.InForceTimeout))
	}
	wait, _ := a.flag("wait")
	if !wait {
		return text(msg)
	}
	state := p.reconciled(ctx, key, deleted, since)
	if state == "" {
		return text(fmt.Sprintf("%s (in force; not reconciled yet after %s)", msg, p.opts.WaitTimeout))
	}
	if state == string(statusync.StateFailed) {
		r := fail(fmt.Sprintf("%s, but its reconcile failed: %s", msg, p.lastError(key)))
		return r
	}
	return text(fmt.Sprintf("%s (%s)", msg, state))
}

func (p *Provider) lastError(key events.Key) string {
	st, _ := p.opts.Statuses.Get(key)
	return st.LastError
}
