package main

// End-to-end tests of exposure policies (the annotation musterd.io/exposure):
// the real binary, npm's server-everything and mcp-fake, each view's
// tools/list after each change of policy, and the calls routed.

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/musterd/musterd/internal/npmtest"
)

// exposedServerYAML declares an MCPServer whose annotation
// musterd.io/exposure holds policy (none when empty).
func exposedServerYAML(name, policy string, spec ...string) string {
	var ann string
	if policy != "" {
		ann = "  annotations:\n    musterd.io/exposure: |\n      " + strings.ReplaceAll(strings.TrimSpace(policy), "\n", "\n      ") + "\n"
	}
	return fmt.Sprintf("apiVersion: muster.giantswarm.io/v1alpha1\nkind: MCPServer\nmetadata:\n  name: %s\n%sspec:\n  %s\n",
		name, ann, strings.Join(spec, "\n  "))
}

// toolsOf lists cs's tools (tools/list), by name.
func toolsOf(t *testing.T, cs *mcp.ClientSession) map[string]*mcp.Tool {
	t.Helper()
	out := map[string]*mcp.Tool{}
	for tool, err := range cs.Tools(callCtx(t), nil) {
		require.NoError(t, err)
		out[tool.Name] = tool
	}
	return out
}

// metaToolNames lists the tools muster's view (/mcp) offers through its
// meta-tool list_tools.
func metaToolNames(t *testing.T, cs *mcp.ClientSession) []string {
	t.Helper()
	out, isErr := callTool(t, cs, "list_tools", nil)
	require.False(t, isErr, out)
	var names []string
	var listed []struct{ Name string }
	if json.Unmarshal([]byte(out), &listed) == nil && len(listed) > 0 {
		for _, l := range listed {
			names = append(names, l.Name)
		}
		return names
	}
	var wrapped struct{ Tools []struct{ Name string } }
	require.NoError(t, json.Unmarshal([]byte(out), &wrapped), out)
	for _, l := range wrapped.Tools {
		names = append(names, l.Name)
	}
	return names
}

// with keeps the names of list that begin as one of prefixes or are one
// of exact, sorted.
func with(list []string, exact ...string) []string {
	var out []string
	for _, n := range list {
		if slices.Contains(exact, n) {
			out = append(out, n)
		}
	}
	slices.Sort(out)
	return out
}

// promptNames lists cs's prompts, by name.
func promptNames(t *testing.T, cs *mcp.ClientSession) []string {
	t.Helper()
	var out []string
	for p, err := range cs.Prompts(callCtx(t), nil) {
		require.NoError(t, err)
		out = append(out, p.Name)
	}
	return out
}

func names(m map[string]*mcp.Tool) []string {
	var out []string
	for n := range m {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}

// A policy changes what every view lists, and where calls go, at once and
// without a restart: only two tools; one renamed and described anew; one
// marked destructive; no prefix; two servers exposing one name, held back
// on both until one is renamed apart; a policy that does not parse, which
// leaves the last good one in force.
func TestE2EExposurePolicyFiltersRenamesAndRoutesWithoutARestart(t *testing.T) {
	everything := npmtest.ServerEverything(t)
	e := startFS(t)
	evSpec := []string{"type: stdio", "autoStart: true", "command: " + yamlValue(everything), `args: ["stdio"]`, "timeout: 60"}
	fakeSpec := stdioSpec("-tools", "echo,reverse")
	e.write(t, "mcpservers/fake.yaml", exposedServerYAML("fake", "", fakeSpec...))
	e.write(t, "mcpservers/everything.yaml", exposedServerYAML("everything", "", evSpec...))
	e.waitServer(t, "fake", "running", func(s serverObject) bool { return s.Status.State == "Running" })
	ev := e.waitServer(t, "everything", "running", func(s serverObject) bool { return s.Status.State == "Running" })
	offered := ev.Status.ToolCount
	require.Greater(t, offered, 4, "server-everything offers many tools")
	proc := theServerProc(t, everything)

	changed := make(chan struct{}, 64)
	direct := e.mcpClient(t, "/mcp/direct", "", &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { notify(changed, struct{}{}) },
	})
	meta := e.mcpClient(t, "/mcp", "", nil)
	own := e.mcpClient(t, "/mcp/servers/everything", "", nil)
	require.Contains(t, toolsOf(t, direct), "x_everything_get-sum")
	require.Greater(t, len(toolsOf(t, own)), 4)
	eventually(t, "everything's prompts are listed", func() bool {
		return slices.Contains(promptNames(t, direct), "x_everything_simple-prompt")
	})

	// Which of everything's and fake's names each view lists now.
	watched := []string{"x_everything_echo", "x_everything_get-sum", "x_everything_add", "x_everything_get-env",
		"echo", "add", "get-sum", "fake-echo", "x_fake_echo", "x_fake_reverse", "reverse"}
	views := func() (directNames, metaNames []string) {
		return with(names(toolsOf(t, direct)), watched...), with(metaToolNames(t, meta), watched...)
	}
	expect := func(step string, want ...string) {
		t.Helper()
		slices.Sort(want)
		eventually(t, step+": /mcp/direct lists "+strings.Join(want, ", "), func() bool {
			d, _ := views()
			return slices.Equal(d, want)
		})
		_, m := views()
		assert.Equal(t, want, m, "%s: muster's list_tools on /mcp", step)
	}
	sum := func(cs *mcp.ClientSession, tool string) string {
		t.Helper()
		out, isErr := callTool(t, cs, tool, map[string]any{"a": 2, "b": 3})
		require.False(t, isErr, out)
		return out
	}
	drainSignals(changed)

	// 1. Only two tools, and a prompt left out.
	e.write(t, "mcpservers/everything.yaml", exposedServerYAML("everything", `{tools: {include: [echo, get-sum]}, prompts: {exclude: [simple-prompt]}}`, evSpec...))
	expect("include two", "x_everything_echo", "x_everything_get-sum", "x_fake_echo", "x_fake_reverse")
	select {
	case <-changed:
	case <-time.After(e2eDeadline):
		t.Fatal("a connected client got no tools/list_changed for a change of policy")
	}
	assert.Equal(t, []string{"echo", "get-sum"}, names(toolsOf(t, own)), "the server's own view: filtered")
	eventually(t, "simple-prompt is left out of every view", func() bool {
		return !slices.Contains(promptNames(t, direct), "x_everything_simple-prompt") &&
			!slices.Contains(promptNames(t, own), "simple-prompt") && len(promptNames(t, own)) > 0
	})
	_, err := own.GetPrompt(callCtx(t), &mcp.GetPromptParams{Name: "simple-prompt"})
	assert.Error(t, err, "a prompt left out is not served on the server's view")
	assert.Contains(t, sum(direct, "x_everything_get-sum"), "5")
	inner, isErr := musterCall(t, meta, "x_everything_get-sum", map[string]any{"a": 2, "b": 3})
	assert.False(t, isErr, inner)
	assert.Contains(t, inner, "5")
	ev = e.waitServer(t, "everything", "shows 2 of its tools", func(s serverObject) bool { return s.Status.ToolCount == 2 })
	assert.Equal(t, []string{"x_everything_echo", "x_everything_get-sum"}, ev.Status.Tools)
	assert.Contains(t, ev.Status.Conditions[0].Message, fmt.Sprintf("serving 2 of its %d tools", offered))
	_, body := e.get(t, "/api/v1/overview")
	var overview struct {
		ServerTools map[string]struct{ Offered, Exposed int }
	}
	require.NoError(t, json.Unmarshal([]byte(body), &overview), body)
	assert.Equal(t, offered, overview.ServerTools["everything"].Offered, body)
	assert.Equal(t, 2, overview.ServerTools["everything"].Exposed, body)
	out, isErr := musterCall(t, meta, "core_reconcile_status", map[string]any{"name": "everything", "kind": "MCPServer"})
	require.False(t, isErr, out)
	assert.Contains(t, out, fmt.Sprintf(`"tools":{"offered":%d,"exposed":2}`, offered))

	// 2. One renamed and described anew.
	e.write(t, "mcpservers/everything.yaml", exposedServerYAML("everything", `
tools:
  include: [echo, get-sum]
  overrides:
    get-sum: {name: add, description: Adds a and b.}
`, evSpec...))
	expect("rename", "x_everything_echo", "x_everything_add", "x_fake_echo", "x_fake_reverse")
	add := toolsOf(t, direct)["x_everything_add"]
	assert.Equal(t, "Adds a and b.", add.Description)
	assert.Contains(t, sum(direct, "x_everything_add"), "5", "the new name reaches the server's get-sum")
	_, err = direct.CallTool(callCtx(t), &mcp.CallToolParams{Name: "x_everything_get-sum", Arguments: map[string]any{"a": 1, "b": 1}})
	if err == nil {
		res, _ := direct.CallTool(callCtx(t), &mcp.CallToolParams{Name: "x_everything_get-sum", Arguments: map[string]any{"a": 1, "b": 1}})
		assert.True(t, res.IsError, "the old name is gone")
	}
	ownTools := toolsOf(t, own)
	assert.Equal(t, []string{"echo", "get-sum"}, names(ownTools), "the server's own view: never renamed")
	assert.NotEqual(t, "Adds a and b.", ownTools["get-sum"].Description, "and its own description")
	assert.Contains(t, sum(own, "get-sum"), "5")

	// 3. One marked destructive.
	e.write(t, "mcpservers/everything.yaml", exposedServerYAML("everything", `
tools:
  include: [echo, get-sum]
  overrides:
    get-sum: {name: add, description: Adds a and b., annotations: {destructiveHint: true}}
`, evSpec...))
	eventually(t, "x_everything_add is marked destructive", func() bool {
		a := toolsOf(t, direct)["x_everything_add"]
		return a != nil && a.Annotations != nil && a.Annotations.DestructiveHint != nil && *a.Annotations.DestructiveHint
	})

	// 4. No prefix.
	e.write(t, "mcpservers/everything.yaml", exposedServerYAML("everything", `
prefix: ""
tools:
  include: [echo, get-sum]
  overrides:
    get-sum: {name: add, description: Adds a and b., annotations: {destructiveHint: true}}
`, evSpec...))
	expect("no prefix", "echo", "add", "x_fake_echo", "x_fake_reverse")
	eventually(t, "the prompts lose the prefix too (and this policy leaves none out)", func() bool {
		p := promptNames(t, direct)
		return slices.Contains(p, "simple-prompt") && !slices.Contains(p, "x_everything_simple-prompt")
	})
	assert.Contains(t, sum(direct, "add"), "5")
	inner, isErr = musterCall(t, meta, "add", map[string]any{"a": 2, "b": 3})
	assert.False(t, isErr, inner)
	assert.Contains(t, inner, "5")

	// 5. A collision: fake's echo, bare too, is everything's echo.
	e.write(t, "mcpservers/fake.yaml", exposedServerYAML("fake", `prefix: ""`, fakeSpec...))
	expect("collision", "add", "reverse")
	for _, name := range []string{"fake", "everything"} {
		s := e.waitServer(t, name, "tells the conflict", func(s serverObject) bool {
			return slices.ContainsFunc(s.Status.Warnings, func(w string) bool { return strings.Contains(w, "tool echo is also exposed by MCPServer default/") })
		})
		assert.NotContains(t, s.Status.Tools, "echo", name)
	}
	out, isErr = musterCall(t, meta, "core_mcpserver_get", map[string]any{"name": "everything"})
	require.False(t, isErr, out)
	assert.Contains(t, out, "tool echo is also exposed by MCPServer default/fake", "core_mcpserver_get shows the conflict")
	_, err = direct.CallTool(callCtx(t), &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"message": "hi"}})
	if err == nil {
		res, _ := direct.CallTool(callCtx(t), &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"message": "hi"}})
		assert.True(t, res.IsError, "a name in conflict routes nowhere")
	}
	// … resolved: fake's echo renamed apart.
	e.write(t, "mcpservers/fake.yaml", exposedServerYAML("fake", `{prefix: "", tools: {overrides: {echo: {name: fake-echo}}}}`, fakeSpec...))
	expect("resolved", "echo", "add", "fake-echo", "reverse")
	text, isErr := callTool(t, direct, "fake-echo", map[string]any{"message": "hi"})
	assert.False(t, isErr, text)
	assert.Equal(t, `echo {"message":"hi"}`, text, "fake-echo reaches fake's echo")
	text, isErr = callTool(t, direct, "echo", map[string]any{"message": "hi"})
	assert.False(t, isErr, text)
	assert.NotEqual(t, `echo {"message":"hi"}`, text, "echo reaches everything's")
	e.waitServer(t, "fake", "no longer tells a conflict", func(s serverObject) bool { return len(s.Status.Warnings) == 0 })
	e.waitServer(t, "everything", "no longer tells a conflict", func(s serverObject) bool { return len(s.Status.Warnings) == 0 })

	// 6. A glob that does not parse: an error naming file and field; the
	// last good policy stays.
	e.write(t, "mcpservers/everything.yaml", exposedServerYAML("everything", `tools: {include: ["get-[sum"]}`, evSpec...))
	bad := e.waitServer(t, "everything", "shows the bad policy", func(s serverObject) bool { return s.Reconcile.LastError != "" })
	assert.Contains(t, bad.Reconcile.LastError, "everything.yaml: metadata.annotations[musterd.io/exposure]: tools.include[0]: pattern \"get-[sum\": unterminated character class")
	assert.Contains(t, bad.Reconcile.LastError, "the last good policy stays in force")
	expect("bad policy", "echo", "add", "fake-echo", "reverse")

	// Lifted: everything under muster's names.
	e.write(t, "mcpservers/everything.yaml", exposedServerYAML("everything", "", evSpec...))
	expect("lifted", "x_everything_echo", "x_everything_get-sum", "x_everything_get-env", "fake-echo", "reverse")
	eventually(t, "simple-prompt is back", func() bool {
		return slices.Contains(promptNames(t, direct), "x_everything_simple-prompt")
	})
	assert.True(t, proc.alive(), "server-everything's process is the one it was at the start: no restart")
	assert.Len(t, serverProcs(everything), 1)
	s, _ := e.server(t, "everything")
	assert.Zero(t, s.Status.RestartCount)
}

// A filter hiding a tool a workflow needs makes the workflow unavailable,
// naming the policy as the cause; lifting it makes it available again.
func TestE2EAFilterHidingAWorkflowsToolMakesItUnavailable(t *testing.T) {
	e := startFS(t)
	fakeSpec := stdioSpec("-tools", "echo,reverse")
	e.write(t, "mcpservers/fake.yaml", exposedServerYAML("fake", "", fakeSpec...))
	e.write(t, "workflows/greet.yaml", workflowYAML("greet", "x_fake_echo"))
	e.waitServer(t, "fake", "running", func(s serverObject) bool { return s.Status.State == "Running" })
	eventually(t, "greet is valid", func() bool {
		r, ok := e.resource(t, "workflows", "greet")
		return ok && r.Status.Valid
	})
	cs := e.mcpClient(t, "/mcp", "", nil)

	e.write(t, "mcpservers/fake.yaml", exposedServerYAML("fake", `tools: {exclude: [echo]}`, fakeSpec...))
	var r resource
	eventually(t, "greet is invalid", func() bool {
		var ok bool
		r, ok = e.resource(t, "workflows", "greet")
		return ok && !r.Status.Valid
	})
	require.Len(t, r.Status.ValidationErrors, 1)
	assert.Equal(t, `step only: tool x_fake_echo is not exposed: MCPServer default/fake's exposure policy (metadata.annotations[musterd.io/exposure]) leaves it out: tools.exclude[0] "echo"`,
		r.Status.ValidationErrors[0])
	assert.Equal(t, []string{"x_fake_echo"}, r.Status.MissingTools)
	out, _ := musterCall(t, cs, "core_workflow_available", map[string]any{"name": "greet"})
	assert.Contains(t, out, `"available":false`)
	res, err := cs.CallTool(callCtx(t), &mcp.CallToolParams{Name: "call_tool", Arguments: map[string]any{"name": "workflow_greet", "arguments": map[string]any{}}})
	require.NoError(t, err)
	assert.True(t, res.IsError, "the workflow does not run")

	e.write(t, "mcpservers/fake.yaml", exposedServerYAML("fake", "", fakeSpec...))
	eventually(t, "greet is valid again", func() bool {
		r, ok := e.resource(t, "workflows", "greet")
		return ok && r.Status.Valid
	})
	eventually(t, "core_workflow_available says so", func() bool {
		out, _ := musterCall(t, cs, "core_workflow_available", map[string]any{"name": "greet"})
		return strings.Contains(out, `"available":true`)
	})
	code, _ := e.get(t, "/api/v1/overview")
	assert.Equal(t, http.StatusOK, code)
}

// muster's aggregator.musterPrefix set to "" drops the global prefix.
func TestE2EAnEmptyMusterPrefixDropsTheXPrefix(t *testing.T) {
	e := startFS(t, "-tool-prefix", "")
	e.write(t, "mcpservers/fake.yaml", mcpServerYAML("fake", stdioSpec("-tools", "echo,reverse")...))
	s := e.waitServer(t, "fake", "running", func(s serverObject) bool { return s.Status.State == "Running" })
	assert.Equal(t, []string{"fake_echo", "fake_reverse"}, s.Status.Tools)
	direct := e.mcpClient(t, "/mcp/direct", "", nil)
	text, isErr := callTool(t, direct, "fake_echo", map[string]any{"message": "hi"})
	assert.False(t, isErr, text)
	assert.Equal(t, `echo {"message":"hi"}`, text)
}
