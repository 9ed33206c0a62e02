package workflow_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/musterd/musterd/pkg/apis/muster/v1alpha1"
	"github.com/musterd/musterd/pkg/catalogue"
	"github.com/musterd/musterd/pkg/events"
	"github.com/musterd/musterd/pkg/reconcilers/workflow"
)

// calls is a workflow whose steps call tools, one step each.
func calls(name string, tools ...string) string {
	var steps strings.Builder
	for i, tool := range tools {
		steps.WriteString("    - {id: s" + string(rune('0'+i)) + ", tool: " + tool + "}\n")
	}
	return wfDoc(name, steps.String())
}

func wfKey(name string) events.Key { return events.NewKey(v1alpha1.KindWorkflow, "", name) }

func TestAvailabilityIsTransitiveThroughNestedWorkflows(t *testing.T) {
	echo := events.NewKey(v1alpha1.KindMCPServer, "", "echo-provider")
	chain := map[string]string{ // top → mid → deep → x_echo-provider_echo
		"top":  calls("top", "workflow_mid"),
		"mid":  calls("mid", "workflow_deep"),
		"deep": calls("deep", "x_echo-provider_echo"),
	}
	with := func(base map[string]string, name, doc string) map[string]string {
		m := map[string]string{}
		for k, v := range base {
			m[k] = v
		}
		if doc == "" {
			delete(m, name)
		} else {
			m[name] = doc
		}
		return m
	}
	type want struct {
		available bool
		missing   []string
	}
	cases := []struct {
		name      string
		workflows map[string]string
		tools     []string // echo-provider's tools
		starting  bool     // echo-provider is still starting
		want      map[string]want
		errors    map[string][]string // the recorded verdict's validation errors
	}{{
		name:      "three levels, every tool offered",
		workflows: chain, tools: []string{"echo"},
		want: map[string]want{"top": {available: true}, "mid": {available: true}, "deep": {available: true}},
	}, {
		name:      "a tool missing at the third level",
		workflows: chain, tools: []string{"other"},
		want: map[string]want{
			"top":  {missing: []string{"x_echo-provider_echo"}},
			"mid":  {missing: []string{"x_echo-provider_echo"}},
			"deep": {missing: []string{"x_echo-provider_echo"}},
		},
		errors: map[string][]string{
			"top":  {"step s0 (through mid → deep): tool x_echo-provider_echo is not offered by any running server"},
			"mid":  {"step s0 (through deep): tool x_echo-provider_echo is not offered by any running server"},
			"deep": {"step s0: tool x_echo-provider_echo is not offered by any running server"},
		},
	}, {
		name:      "the nested workflow at the third level not declared",
		workflows: with(chain, "deep", ""), tools: []string{"echo"},
		want: map[string]want{
			"top": {missing: []string{"workflow_deep"}},
			"mid": {missing: []string{"workflow_deep"}},
		},
		errors: map[string][]string{
			"top": {"step s0 (through mid): tool workflow_deep is not offered by any running server"},
			"mid": {"step s0: tool workflow_deep is not offered by any running server"},
		},
	}, {
		name:      "a server still starting offers nothing yet",
		workflows: chain, starting: true,
		want: map[string]want{
			"top":  {missing: []string{"x_echo-provider_echo"}},
			"mid":  {missing: []string{"x_echo-provider_echo"}},
			"deep": {missing: []string{"x_echo-provider_echo"}},
		},
	}, {
		name: "a diamond: the shared workflow's missing tool is needed once",
		workflows: map[string]string{
			"a": calls("a", "workflow_b", "workflow_c"),
			"b": calls("b", "workflow_d"),
			"c": calls("c", "workflow_d", "x_echo-provider_echo"),
			"d": calls("d", "x_echo-provider_gone"),
		},
		tools: []string{"echo"},
		want: map[string]want{
			"a": {missing: []string{"x_echo-provider_gone"}},
			"b": {missing: []string{"x_echo-provider_gone"}},
			"c": {missing: []string{"x_echo-provider_gone"}},
			"d": {missing: []string{"x_echo-provider_gone"}},
		},
		errors: map[string][]string{
			"a": {"step s0 (through b → d): tool x_echo-provider_gone is not offered by any running server"},
		},
	}, {
		name: "a cycle ends: never available, what it lacks still named",
		workflows: map[string]string{
			"a":    calls("a", "workflow_b"),
			"b":    calls("b", "workflow_c", "x_echo-provider_gone"),
			"c":    calls("c", "workflow_a"),
			"self": calls("self", "workflow_self", "x_echo-provider_echo"),
		},
		tools: []string{"echo"},
		want: map[string]want{
			"a":    {missing: []string{"x_echo-provider_gone"}},
			"b":    {missing: []string{"x_echo-provider_gone"}},
			"c":    {missing: []string{"x_echo-provider_gone"}},
			"self": {},
		},
		errors: map[string][]string{
			"a":    {"step s0 (through b): tool x_echo-provider_gone is not offered by any running server", "calls itself: a → b → c → a"},
			"self": {"calls itself: self → self"},
		},
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness()
			if tc.tools != nil {
				h.cat.Set(echo, "", tc.tools)
			}
			if tc.starting {
				h.cat.SetStarting(echo, catalogue.Naming{}, true)
			}
			for name, doc := range tc.workflows {
				h.declare(t, "workflows/"+name+".yaml", doc, wfKey(name))
			}
			for name, w := range tc.want {
				got, found := h.r.Availability(wfKey(name))
				require.True(t, found, name)
				assert.Equal(t, w.available, got.Available, "%s available", name)
				assert.Equal(t, w.missing, got.MissingTools, "%s missing", name)

				// The reconciler's verdict says the same, by the same walk.
				_, st := h.reconcile(t, wfKey(name))
				assert.Equal(t, w.available, st.Valid, "%s's verdict", name)
				assert.Equal(t, w.missing, st.MissingTools, "%s's verdict's missing tools", name)
				if errs, ok := tc.errors[name]; ok {
					assert.Equal(t, errs, st.ValidationErrors, "%s's verdict's errors", name)
				}
			}
		})
	}
}

func TestAFamilyToolOfferedByManyMembersIsAvailable(t *testing.T) {
	h := newHarness()
	naming := catalogue.Naming{Family: "prometheus", InstanceArg: "management_cluster"}
	query := &mcp.Tool{Name: "execute_query", InputSchema: map[string]any{"type": "object"}}
	for _, mc := range []string{"mc1-mcp-prometheus", "mc2-mcp-prometheus"} {
		h.cat.Update(events.NewKey(v1alpha1.KindMCPServer, "", mc), naming, []*mcp.Tool{query}, time.Time{})
	}
	require.True(t, slices.Contains(h.cat.Tools(), "x_prometheus_execute_query"), "%q", h.cat.Tools())
	h.declare(t, "workflows/runbook.yaml", calls("runbook", "x_prometheus_execute_query"), wfKey("runbook"))
	h.declare(t, "workflows/outer.yaml", calls("outer", "workflow_runbook"), wfKey("outer"))
	for _, name := range []string{"runbook", "outer"} {
		got, found := h.r.Availability(wfKey(name))
		require.True(t, found)
		assert.True(t, got.Available, name)
		assert.Empty(t, got.MissingTools, name)
	}
}

func TestAvailabilityOfWhatIsNotDeclaredOrNotSound(t *testing.T) {
	h := newHarness()
	_, found := h.r.Availability(wfKey("nowhere"))
	assert.False(t, found)

	// A template that does not parse: offered tools do not make it run.
	h.cat.Set(git, "", []string{"status"})
	h.declare(t, "workflows/tpl.yaml", wfDoc("tpl", "    - {id: a, tool: x_git_status, args: {x: \"{{ .input.x \"}}\n"), wfKey("tpl"))
	got, found := h.r.Availability(wfKey("tpl"))
	require.True(t, found)
	assert.False(t, got.Available, "judged now")
	assert.Empty(t, got.MissingTools)
	_, st := h.reconcile(t, wfKey("tpl"))
	assert.False(t, st.Valid)
	got, _ = h.r.Availability(wfKey("tpl"))
	assert.False(t, got.Available, "as the verdict found")
}

// A workflow that needs the tool of servers users connect to on their own
// (a protected family, here) is available to a user whose own connections
// offer it, and to no other: not to a user who connected to none of them,
// nor in the catalogue's own view, whoever else connected or listed.
func TestAvailabilityIsTheCallersOwn(t *testing.T) {
	h := newHarness()
	naming := catalogue.Naming{Family: "kubernetes", InstanceArg: "management_cluster"}
	list := &mcp.Tool{Name: "list", InputSchema: map[string]any{"type": "object"}}
	const alice, bob = "user:https://idp|alice", "user:https://idp|bob"
	for _, mc := range []string{"mc1-mcp-kubernetes", "mc2-mcp-kubernetes"} {
		h.cat.UpdateFor(alice, events.NewKey(v1alpha1.KindMCPServer, "", mc), naming, []*mcp.Tool{list}, time.Time{})
	}
	h.declare(t, "workflows/runbook.yaml", calls("runbook", "x_kubernetes_list"), wfKey("runbook"))
	h.declare(t, "workflows/outer.yaml", calls("outer", "workflow_runbook"), wfKey("outer"))
	for _, name := range []string{"runbook", "outer"} {
		got, found := h.r.AvailabilityFor(wfKey(name), alice)
		require.True(t, found)
		assert.Equal(t, workflow.Availability{Available: true}, got, "%s for alice, whose connections offer the family's tool", name)
		missing := workflow.Availability{MissingTools: []string{"x_kubernetes_list"}}
		got, _ = h.r.AvailabilityFor(wfKey(name), bob)
		assert.Equal(t, missing, got, "%s for bob, who connected to neither member", name)
		got, _ = h.r.Availability(wfKey(name))
		assert.Equal(t, missing, got, "%s in the catalogue's own view", name)
		got, _ = h.r.AvailabilityFor(wfKey(name), "")
		assert.Equal(t, missing, got, "%s for no caller", name)
	}
	// Alice's connections gone, the workflow is hers no more.
	h.cat.ForgetOwner(alice)
	got, _ := h.r.AvailabilityFor(wfKey("runbook"), alice)
	assert.False(t, got.Available)
}
