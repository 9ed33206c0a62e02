package coretools

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/musterd/musterd/pkg/apis/muster/v1alpha1"
	"github.com/musterd/musterd/pkg/controls"
	"github.com/musterd/musterd/pkg/declare"
	"github.com/musterd/musterd/pkg/events"
	"github.com/musterd/musterd/pkg/identity"
	"github.com/musterd/musterd/pkg/redact"
)

// The MCP server tools (muster's internal/mcpserver/api_adapter.go).

func (p *Provider) mcpServerValidate(_ context.Context, m map[string]any) *mcp.CallToolResult {
	return p.validate(m, mcpServerWrites, "mcpserver")
}

// validate checks the definition a create or update of w's kind would
// write, and writes nothing; noun names the kind in the answer.
func (p *Provider) validate(m map[string]any, w writes, noun string) *mcp.CallToolResult {
	a := args{m}
	name, bad := a.name()
	if bad != nil {
		return bad
	}
	spec := w.spec(a)
	key := p.key(w.kind, name)
	if _, _, err := declare.Validate(key, spec, nil); err != nil {
		if w.refused != nil {
			answer, why := w.refused(opValidate, err)
			p.validated(key, opValidate, why)
			return fail(answer)
		}
		msg := err.Error()
		if w.scrub {
			msg = declare.Scrub(spec, msg)
		}
		p.validated(key, opValidate, msg)
		return fail("Validation failed: " + msg)
	}
	p.validated(key, opValidate, "")
	return text("Validation successful for " + noun + " " + name)
}

func (p *Provider) mcpServerCreate(ctx context.Context, m map[string]any) *mcp.CallToolResult {
	return p.write(ctx, m, mcpServerWrites, opCreate)
}

func (p *Provider) mcpServerUpdate(ctx context.Context, m map[string]any) *mcp.CallToolResult {
	return p.write(ctx, m, mcpServerWrites, opUpdate)
}

func (p *Provider) mcpServerDelete(ctx context.Context, m map[string]any) *mcp.CallToolResult {
	return p.delete(ctx, m, v1alpha1.KindMCPServer, "MCP server '%s' deleted successfully", "Failed to delete MCP server: ")
}

// The operations of validate and write.
const (
	opValidate = "validate"
	opCreate   = "create"
	opUpdate   = "update"
)

// writes are what create and update of one kind say: muster's texts, which
// differ between the kinds.
type writes struct {
	kind string
	// spec is the definition's spec from the call's arguments.
	spec func(args) map[string]any
	// what names the kind in failures ("Failed to create MCP server: ")
	// and in the log.
	what, logWhat string
	// invalid prefixes a definition declare finds invalid, exists is the
	// text of a create of a name declared; "" for the failure's text.
	invalid, exists string
	// scrub removes env and header values from error texts.
	scrub bool
	// refused, when set, answers a definition declare refuses in the
	// words of the kind's own tools (op's answer, and why for the event);
	// instead of invalid.
	refused func(op string, err error) (answer, why string)
	// created and updated are the answers, with the name for a %s.
	created, updated string
}

var mcpServerWrites = writes{kind: v1alpha1.KindMCPServer, spec: mcpServerSpec, what: "MCP server", logWhat: "mcp server",
	invalid: "Invalid MCP server definition: ", exists: "MCP server '%s' already exists", scrub: true,
	created: "MCP server '%s' created successfully", updated: "MCP server '%s' updated successfully"}

var workflowWrites = writes{kind: v1alpha1.KindWorkflow, spec: workflowSpec, what: "workflow", logWhat: "workflow",
	refused: workflowRefused, created: "Workflow created successfully", updated: "Workflow '%s' updated successfully"}

// RegisteredByAnnotation names, on an MCPServer created through
// core_mcpserver_create, the authenticated user who created it: stamped
// here, from who the caller is, so that no client can claim another or
// leave it out (muster's annotation, which its developer portal reads).
// An update keeps it, as it keeps every annotation.
const RegisteredByAnnotation = "ui.giantswarm.io/registered-by"

// registeredBy is the metadata a create of kind by ctx's caller stamps:
// the user's subject on an MCPServer; nothing without a user.
func registeredBy(ctx context.Context, kind string) []declare.Meta {
	who, ok := identity.From(ctx)
	if !ok || who.Subject == "" || kind != v1alpha1.KindMCPServer {
		return nil
	}
	return []declare.Meta{{Annotations: map[string]string{RegisteredByAnnotation: who.Subject}}}
}

// write creates or updates (op) a definition of w's kind, as delete deletes.
func (p *Provider) write(ctx context.Context, m map[string]any, w writes, op string) *mcp.CallToolResult {
	a := args{m}
	name, bad := a.name()
	if bad != nil {
		return bad
	}
	var version string
	if op == opUpdate {
		if version, bad = a.str("resourceVersion"); bad != nil {
			return bad
		}
	}
	if _, bad := a.flag("wait"); bad != nil {
		return bad
	}
	key := p.key(w.kind, name)
	spec := w.spec(a)
	if w.kind == v1alpha1.KindMCPServer && op != opValidate {
		if why := p.usersTokensRefusal(ctx, key, spec); why != "" {
			return fail("Failed to " + op + " " + w.what + ": " + why)
		}
	}
	since := time.Now()
	var (
		def declare.Definition
		err error
	)
	// A create's definition is told valid before it is written, as muster
	// tells it: its WorkflowValidationSucceeded comes before its
	// WorkflowCreated. An update's is whole only once merged by the Store.
	told := false
	if op == opCreate {
		if _, _, verr := declare.Validate(key, spec, nil); verr == nil {
			p.validated(key, op, "")
			told = true
		}
	}
	if op == opCreate {
		def, err = p.opts.Store.Create(ctx, key, spec, registeredBy(ctx, w.kind)...)
	} else {
		def, err = p.opts.Store.Update(ctx, key, spec, version)
	}
	if err != nil {
		msg := err.Error()
		if w.scrub {
			msg = declare.Scrub(spec, msg)
		}
		var (
			invalid *declare.InvalidError
			exists  *declare.ExistsError
		)
		isInvalid := errors.As(err, &invalid)
		if isInvalid && w.refused != nil {
			answer, why := w.refused(op, err)
			if !told {
				p.validated(key, op, why)
			}
			return fail(answer)
		}
		if isInvalid && !told {
			p.validated(key, op, msg)
		}
		switch {
		case w.invalid != "" && isInvalid:
			return fail(w.invalid + msg)
		case w.exists != "" && errors.As(err, &exists):
			return fail(fmt.Sprintf(w.exists, name))
		}
		return fail("Failed to " + op + " " + w.what + ": " + msg)
	}
	if !told {
		p.validated(key, op, "")
	}
	p.log.Info(w.logWhat+" "+op+"d", "key", key.String(), "where", def.Where)
	ok := w.created
	if op == opUpdate {
		ok = w.updated
	}
	if strings.Contains(ok, "%s") {
		ok = fmt.Sprintf(ok, name)
	}
	return p.settled(ctx, a, key, def, false, since, ok)
}

func (p *Provider) delete(ctx context.Context, m map[string]any, kind, ok, failed string) *mcp.CallToolResult {
	a := args{m}
	name, bad := a.name()
	if bad != nil {
		return bad
	}
	version, bad := a.str("resourceVersion")
	if bad != nil {
		return bad
	}
	if _, bad := a.flag("wait"); bad != nil {
		return bad
	}
	key := p.key(kind, name)
	since := time.Now()
	cur, err := p.opts.Store.Get(ctx, key)
	if _, invalid := errors.AsType[*declare.InvalidError](err); invalid {
		// A definition that does not decode is deleted all the same, as
		// muster's users delete what they cannot fix in place: Delete
		// judges whether its file declares it alone.
		cur, err = declare.Definition{}, nil
	}
	if err == nil {
		err = p.opts.Store.Delete(ctx, key, version)
	}
	if err != nil {
		return fail(failed + err.Error())
	}
	p.log.Info("definition deleted", "key", key.String(), "where", cur.Where)
	return p.settled(ctx, a, key, cur, true, since, fmt.Sprintf(ok, name))
}

// The workflow tools (muster's internal/workflow/api_adapter.go).

// workflowSpec is a workflow's spec from a call's arguments, with the
// snake_case spellings muster's tools accept turned into the file's
// camelCase.
func workflowSpec(a args) map[string]any {
	spec := a.spec()
	for _, k := range []string{"steps", "onFailure"} {
		if v, ok := spec[k]; ok {
			spec[k] = camel(v)
		}
	}
	return spec
}

var snakeToCamel = map[string]string{"allow_failure": "allowFailure", "from_step": "fromStep", "expect_not": "expectNot", "json_path": "jsonPath", "for_each": "forEach", "on_failure": "onFailure"}

// camel renames the snake_case keys of steps, conditions and their
// expectations, at any depth but inside args (a tool's own arguments).
func camel(v any) any {
	switch v := v.(type) {
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = camel(e)
		}
		return out
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, e := range v {
			if c, ok := snakeToCamel[k]; ok {
				if _, both := v[c]; !both {
					k = c
				}
			}
			if k == "args" {
				out[k] = e
				continue
			}
			out[k] = camel(e)
		}
		return out
	}
	return v
}

func (p *Provider) workflowValidate(_ context.Context, m map[string]any) *mcp.CallToolResult {
	if r := workflowUnnamed(m); r != nil {
		return fail(r.answer(opValidate))
	}
	return p.validate(m, workflowWrites, "workflow")
}

func (p *Provider) workflowCreate(ctx context.Context, m map[string]any) *mcp.CallToolResult {
	if r := workflowUnnamed(m); r != nil {
		return fail(r.answer(opCreate))
	}
	return p.write(ctx, m, workflowWrites, opCreate)
}

func (p *Provider) workflowUpdate(ctx context.Context, m map[string]any) *mcp.CallToolResult {
	if r := workflowUnnamed(m); r != nil {
		return fail(r.answer(opUpdate))
	}
	return p.write(ctx, m, workflowWrites, opUpdate)
}

func (p *Provider) workflowDelete(ctx context.Context, m map[string]any) *mcp.CallToolResult {
	return p.delete(ctx, m, v1alpha1.KindWorkflow, "Workflow '%s' deleted successfully", "Failed to delete workflow: ")
}

// The service tools (muster's internal/orchestrator/api_adapter.go).

func (p *Provider) serviceStart(ctx context.Context, m map[string]any) *mcp.CallToolResult {
	return p.service(ctx, m, controls.ActionStart, p.opts.Controls.Start)
}

func (p *Provider) serviceStop(ctx context.Context, m map[string]any) *mcp.CallToolResult {
	return p.service(ctx, m, controls.ActionStop, p.opts.Controls.Stop)
}

func (p *Provider) serviceRestart(ctx context.Context, m map[string]any) *mcp.CallToolResult {
	return p.service(ctx, m, controls.ActionRestart, p.opts.Controls.Restart)
}

func (p *Provider) service(ctx context.Context, m map[string]any, action string, do func(context.Context, events.Key, string) (controls.ServiceResult, error)) *mcp.CallToolResult {
	a := args{m}
	name, bad := a.name()
	if bad != nil {
		return bad
	}
	reason, bad := a.str("reason")
	if bad != nil {
		return bad
	}
	verb := map[string][2]string{
		controls.ActionStart:   {"start", "started"},
		controls.ActionStop:    {"stop", "stopped"},
		controls.ActionRestart: {"restart", "restarted"},
	}[action]
	res, err := do(ctx, p.key(v1alpha1.KindMCPServer, name), reason)
	switch {
	case errors.Is(err, controls.ErrNotFound):
		return fail(fmt.Sprintf("Failed to %s service: service %s not found", verb[0], name))
	case err != nil:
		return fail(fmt.Sprintf("Failed to %s service: %v", verb[0], err))
	case res.Unchanged && action == controls.ActionStart:
		return text(fmt.Sprintf("Service '%s' is already running", name))
	case res.Unchanged:
		return text(fmt.Sprintf("Service '%s' is already stopped", name))
	case res.Failed():
		return fail(fmt.Sprintf("Failed to %s service: %s", verb[0], res.Error))
	case !res.Reconciled:
		return text(fmt.Sprintf("Requested to %s service '%s'; not done yet (state %s, correlation %s)", verb[0], name, res.State, res.CorrelationID))
	case res.State == string(v1alpha1.MCPServerStateAuthRequired) && action != controls.ActionStop:
		// The server answered 401: a start cannot log anyone in.
		return fail(fmt.Sprintf("Service '%s' requires OAuth authentication.\n\n"+
			"To connect to this server, use the core_auth_login tool:\n  core_auth_login(server=\"%s\")\n\n"+
			"The service start/restart command cannot be used for OAuth-protected servers because authentication is session-scoped.", name, name))
	}
	return text(fmt.Sprintf("Successfully %s service '%s'", verb[1], name))
}

// validated publishes the outcome of a check of key's definition that
// request (validate, create or update) asked for: invalid, with why
// (already scrubbed of env and header values, and redacted here), or
// valid.
func (p *Provider) validated(key events.Key, request, invalid string) {
	if p.opts.Publish == nil {
		return
	}
	p.opts.Publish(events.DefinitionValidated{Meta: events.NewMeta(""), Key: key, Request: request,
		Error: redact.String(invalid)})
}
