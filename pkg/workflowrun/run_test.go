package workflowrun_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/musterd/musterd/pkg/events"
	"github.com/musterd/musterd/pkg/workflowrun"
)

func TestInputDefaultsAndAStepResultFeedTheNextStepTyped(t *testing.T) {
	h := newHarness(t, workflowrun.Options{})
	h.declare(wf("chain", `  args:
    name: {type: string, required: true, description: the name}
    count: {type: integer, default: 3}
    tags: {type: array, default: [a, b]}
  steps:
    - id: first
      tool: x_fake_json
      args:
        who: "{{ .input.name }}"
        n: "{{ .input.count }}"
        tags: "{{ .input.tags }}"
    - id: second
      tool: x_fake_json
      args:
        doubled: "{{ mul .results.first.n 2 }}"
        firstTag: "{{ index .results.first.tags 0 }}"
        greeting: "hello {{ .context.first.who | upper }}"
        same: "{{ .results.first.n }}"
`))
	// muster's CLI sends every argument as text: text that reads as the
	// declared type is taken as it.
	doc, isError := h.run("chain", map[string]any{"name": "ada", "count": "4", "tags": `["x"]`})
	require.False(t, isError, "%v", doc)
	assert.Equal(t, map[string]any{"name": "ada", "count": 4.0, "tags": []any{"x"}}, doc["input"])

	doc, isError = h.run("chain", map[string]any{"name": "ada"})
	require.False(t, isError, "%v", doc)
	assert.Equal(t, "completed", doc["status"])
	assert.Equal(t, "chain", doc["workflow"])
	assert.NotEmpty(t, doc["execution_id"])
	assert.Equal(t, map[string]any{"name": "ada", "count": 3.0, "tags": []any{"a", "b"}}, doc["input"], "defaults filled in")
	// The last step is a plain tool step not marked output: its result is
	// merged into the top level, typed (the single expressions kept their
	// type: a number, not "3").
	assert.Equal(t, 6.0, doc["doubled"])
	assert.Equal(t, "a", doc["firstTag"])
	assert.Equal(t, "hello ADA", doc["greeting"])
	assert.Equal(t, 3.0, doc["same"])
	// template_vars, as muster lists them: the input references of the
	// templates rendered, in the order rendered (a step's arguments in key
	// order), each once.
	assert.Equal(t, []any{"input.count", "input.tags", "input.name"}, doc["template_vars"])
	steps := stepsOf(t, doc)
	assert.Equal(t, "completed", steps["first"]["status"])
	assert.Nil(t, steps["first"]["result"], "results of steps not marked output are not shown")

	// The tool's schema comes from spec.args.
	var tool *mcp.Tool
	h.engine.Refresh()
	for _, tl := range h.engine.Tools() {
		if tl.Name == "workflow_chain" {
			tool = tl
		}
	}
	require.NotNil(t, tool)
	var schema map[string]any
	require.NoError(t, json.Unmarshal(tool.InputSchema.(json.RawMessage), &schema))
	assert.Equal(t, []any{"name"}, schema["required"])
	props := schema["properties"].(map[string]any)
	assert.Equal(t, map[string]any{"type": "string", "description": "the name"}, props["name"])
	assert.Equal(t, map[string]any{"type": "integer", "default": 3.0}, props["count"])
}

func TestConditionsBothWays(t *testing.T) {
	h := newHarness(t, workflowrun.Options{})
	h.declare(wf("cond", `  args:
    go: {type: boolean, default: false}
  steps:
    - id: probe
      tool: x_fake_json
      args: {state: ready, items: [{name: a}, {name: b}]}
    - id: byTemplate
      tool: x_fake_json
      args: {ran: template}
      condition:
        template: "{{ .input.go }}"
    - id: byTool
      tool: x_fake_json
      args: {ran: tool}
      condition:
        tool: x_fake_json
        args: {phase: "{{ .results.probe.state }}"}
        expect:
          success: true
          jsonPath:
            phase: ready
    - id: byStep
      tool: x_fake_json
      args: {ran: step}
      condition:
        fromStep: probe
        expect:
          jsonPath:
            "items[1].name": b
            "{{ len .result.items }}": 2
    - id: notOnFailure
      tool: x_fake_json
      args: {ran: expectNot}
      condition:
        tool: x_fake_fail
        expectNot:
          success: false
  output:
    ran: "{{ .results }}"
`))
	doc, isError := h.run("cond", map[string]any{"_debug": true})
	require.False(t, isError, "%v", doc)
	steps := stepsOf(t, doc)
	assert.Equal(t, "skipped", steps["byTemplate"]["status"])
	assert.Equal(t, false, steps["byTemplate"]["condition_evaluation"])
	assert.Equal(t, "completed", steps["byTool"]["status"])
	assert.Equal(t, "x_fake_json", steps["byTool"]["condition_tool"])
	assert.Equal(t, "completed", steps["byStep"]["status"])
	assert.Equal(t, "from_step:probe", steps["byStep"]["condition_tool"])
	assert.Equal(t, "skipped", steps["notOnFailure"]["status"], "the condition tool failed, which expectNot refuses")

	doc, isError = h.run("cond", map[string]any{"go": true})
	require.False(t, isError)
	ran := doc["ran"].(map[string]any)
	assert.Equal(t, map[string]any{"ran": "template"}, ran["byTemplate"], "the template condition held this time")

	// And a tool condition that does not hold.
	h.declare(wf("cond2", `  steps:
    - id: gated
      tool: x_fake_json
      condition:
        tool: x_fake_json
        args: {phase: pending}
        expect:
          jsonPath: {phase: ready}
`))
	doc, isError = h.run("cond2", nil)
	require.False(t, isError)
	assert.Equal(t, "skipped", stepsOf(t, doc)["gated"]["status"])
}

func TestForEachKeepsEveryIterationsResult(t *testing.T) {
	for _, concurrency := range []int{1, 3} {
		h := newHarness(t, workflowrun.Options{ForEachConcurrency: concurrency})
		h.declare(wf("loop", `  args:
    hosts: {type: array, required: true}
  steps:
    - id: each
      forEach:
        items: "{{ .input.hosts }}"
        as: host
        steps:
          - id: ping
            tool: x_fake_json
            args: {host: "{{ .vars.host }}", i: "{{ .vars.host_index }}"}
          - id: pong
            tool: x_fake_json
            args: {saw: "{{ .results.ping.host }}"}
  output:
    first: "{{ .results.ping_0.host }}"
    third: "{{ .results.pong_2.saw }}"
    index: "{{ .results.ping_1.i }}"
    last: "{{ .results.ping.host }}"
`))
		doc, isError := h.run("loop", map[string]any{"hosts": []any{"a", "b", "c"}})
		require.False(t, isError, "%v", doc)
		assert.NotEmpty(t, doc["execution_id"], "muster adds the execution's id to the output")
		delete(doc, "execution_id")
		assert.Equal(t, map[string]any{"first": "a", "third": "c", "index": 1.0, "last": "c"}, doc, "concurrency %d", concurrency)
	}
}

func TestParallelMergesBySubStepID(t *testing.T) {
	h := newHarness(t, workflowrun.Options{Concurrency: 2})
	h.declare(wf("par", `  steps:
    - id: fan
      parallel:
        - {id: a, tool: x_fake_sleep, args: {ms: 50}}
        - {id: b, tool: x_fake_json, args: {v: b}}
        - {id: c, tool: x_fake_json, args: {v: c}}
    - id: after
      tool: x_fake_json
      args: {got: "{{ .results.a.slept }}-{{ .results.b.v }}-{{ .results.c.v }}"}
`))
	doc, isError := h.run("par", nil)
	require.False(t, isError, "%v", doc)
	assert.Equal(t, "50-b-c", doc["got"])
	var order []string
	for _, s := range doc["steps"].([]any) {
		order = append(order, s.(map[string]any)["id"].(string))
	}
	assert.Equal(t, []string{"a", "b", "c", "after"}, order, "steps[] in declaration order, though a finished last")
}

func TestAllowFailureGoesOnAndOnFailureCleansUp(t *testing.T) {
	h := newHarness(t, workflowrun.Options{})
	h.declare(wf("tolerant", `  steps:
    - id: flaky
      tool: x_fake_fail
      allowFailure: true
    - id: next
      tool: x_fake_json
      args: {flakyFailed: "{{ .results.flaky.isError }}"}
`))
	doc, isError := h.run("tolerant", nil)
	require.False(t, isError, "%v", doc)
	assert.Equal(t, true, doc["flakyFailed"])
	steps := stepsOf(t, doc)
	assert.Equal(t, "failed", steps["flaky"]["status"])
	assert.Equal(t, true, steps["flaky"]["allow_failure"])

	h.declare(wf("strict", `  steps:
    - {id: one, tool: x_fake_json, args: {v: 1}}
    - {id: boom, tool: x_fake_fail, args: {why: test}}
    - {id: never, tool: x_fake_json}
  onFailure:
    - {id: undo, tool: x_fake_json, args: {undo: "{{ .results.one.v }}"}}
    - {id: undoFails, tool: x_fake_fail}
    - {id: undoAgain, tool: x_fake_json}
`))
	doc, isError = h.run("strict", nil)
	require.True(t, isError)
	assert.Equal(t, "failed", doc["status"])
	assert.Equal(t, `workflow strict, step boom: x_fake_fail returned an error: failed as asked: {"why":"test"}`, doc["error"])
	steps = stepsOf(t, doc)
	assert.NotContains(t, steps, "never")
	assert.Equal(t, "completed", steps["undo"]["status"], "onFailure ran")
	assert.Equal(t, "failed", steps["undoFails"]["status"])
	assert.Equal(t, "completed", steps["undoAgain"]["status"], "onFailure goes on past its own failures")
}

func TestOutputTemplateAndDebug(t *testing.T) {
	h := newHarness(t, workflowrun.Options{})
	h.declare(wf("shaped", `  steps:
    - {id: s1, tool: x_fake_json, args: {items: [1, 2, 3]}}
  output:
    count: "{{ len .results.s1.items }}"
    nested: {first: "{{ index .results.s1.items 0 }}", text: "n={{ len .results.s1.items }}"}
`))
	doc, isError := h.run("shaped", nil)
	require.False(t, isError)
	assert.NotEmpty(t, doc["execution_id"], "muster adds the execution's id to the output")
	delete(doc, "execution_id")
	assert.Equal(t, map[string]any{"count": 3.0, "nested": map[string]any{"first": 1.0, "text": "n=3"}}, doc)

	doc, _ = h.run("shaped", map[string]any{"_debug": true})
	assert.Equal(t, "completed", doc["status"])
	assert.Equal(t, map[string]any{"count": 3.0, "nested": map[string]any{"first": 1.0, "text": "n=3"}}, doc["output"])
	assert.Equal(t, map[string]any{"items": []any{1.0, 2.0, 3.0}}, stepsOf(t, doc)["s1"]["result"], "debug shows every result")
}

func TestAWorkflowCallsAnother(t *testing.T) {
	h := newHarness(t, workflowrun.Options{})
	h.declare(wf("inner", `  args:
    x: {type: number, required: true}
  steps:
    - {id: double, tool: x_fake_json, args: {y: "{{ mul .input.x 2 }}"}}
`))
	h.declare(wf("outer", `  steps:
    - {id: call, tool: workflow_inner, args: {x: 21}}
    - {id: use, tool: x_fake_json, args: {got: "{{ .results.call.y }}", from: "{{ .results.call.workflow }}"}}
`))
	doc, isError := h.run("outer", nil)
	require.False(t, isError, "%v", doc)
	assert.Equal(t, 42.0, doc["got"])
	assert.Equal(t, "inner", doc["from"])
}

func TestACycleIsRefusedByTheValidator(t *testing.T) {
	h := newHarness(t, workflowrun.Options{})
	a := h.declare(wf("a", "  steps:\n    - {id: s, tool: workflow_b}\n"))
	b := h.declare(wf("b", "  steps:\n    - {id: s, tool: workflow_c}\n"))
	h.declare(wf("c", "  steps:\n    - {id: s, tool: workflow_a}\n"))
	self := h.declare(wf("self", "  steps:\n    - {id: s, tool: x_fake_json}\n    - {id: again, tool: workflow_self}\n"))
	st := h.reconcile(a)
	assert.False(t, st.Valid)
	assert.Equal(t, []string{"calls itself: a → b → c → a"}, st.ValidationErrors)
	assert.Equal(t, []string{"calls itself: b → c → a → b"}, h.reconcile(b).ValidationErrors)
	assert.Equal(t, []string{"calls itself: self → self"}, h.reconcile(self).ValidationErrors)

	text, isError := h.call(context.Background(), "self", nil)
	assert.True(t, isError)
	assert.Equal(t, "workflow self is not available (calls itself: self → self)", text)
	h.engine.Refresh()
	assert.NotContains(t, toolNames(h.engine.Tools()), "workflow_self", "an invalid workflow is no tool")
}

func TestAnUnavailableWorkflowFailsAtOnceNamingWhatIsMissing(t *testing.T) {
	h := newHarness(t, workflowrun.Options{})
	h.declare(wf("needy", "  steps:\n    - {id: s, tool: x_git_status}\n    - {id: t, tool: x_k8s_get}\n"))
	text, isError := h.call(context.Background(), "needy", nil)
	assert.True(t, isError)
	assert.Equal(t, "workflow needy is not available (missing required tools: x_git_status, x_k8s_get)", text)
	assert.Zero(t, h.router.calls.Load(), "nothing was called")

	changed := 0
	h2 := newHarness(t, workflowrun.Options{OnToolsChanged: func() { changed++ }})
	k := h2.declare(wf("needy", "  steps:\n    - {id: s, tool: x_git_status}\n"))
	h2.engine.Refresh()
	assert.Equal(t, 1, changed, "the first Refresh reports the tools")
	h2.engine.Refresh()
	assert.Equal(t, 1, changed, "nothing changed")
	h2.cat.Set(events.NewKey("MCPServer", "", "git"), "", []string{"status"})
	h2.reconcile(k)
	h2.engine.Refresh()
	assert.Equal(t, 2, changed, "the workflow became valid")
	assert.Contains(t, toolNames(h2.engine.Tools()), "workflow_needy")
}

func toolNames(tools []*mcp.Tool) []string {
	var out []string
	for _, t := range tools {
		out = append(out, t.Name)
	}
	return out
}

func TestCancellationStopsTheRunAndCancelsTheServersCall(t *testing.T) {
	h := newHarness(t, workflowrun.Options{})
	h.declare(wf("slow", `  steps:
    - {id: nap, tool: x_fake_sleep, args: {ms: 600000}}
    - {id: never, tool: x_fake_json}
  onFailure:
    - {id: cleanup, tool: x_fake_json, args: {cleaning: true}}
`))
	ctx, cancel := context.WithCancel(context.Background())
	var (
		progress sync.Once
		started  = make(chan struct{})
	)
	done := make(chan *mcp.CallToolResult)
	go func() {
		res, _ := h.router.CallTool(ctx, "workflow_slow", nil, func(*mcp.ProgressNotificationParams) { progress.Do(func() { close(started) }) })
		done <- res
	}()
	select {
	case <-started: // the server is sleeping, and its progress reached the caller
	case <-time.After(time.Minute):
		t.Fatal("no progress reached the caller")
	}
	cancel()
	res := <-done
	require.True(t, res.IsError)
	var doc map[string]any
	require.NoError(t, json.Unmarshal([]byte(res.Content[0].(*mcp.TextContent).Text), &doc))
	assert.Equal(t, "workflow slow, step nap: calling x_fake_sleep: the run was cancelled", doc["error"])
	steps := stepsOf(t, doc)
	assert.Equal(t, "completed", steps["cleanup"]["status"], "onFailure ran on a context of its own")
	assert.NotContains(t, steps, "never")

	// The server saw its call cancelled.
	require.Eventually(t, func() bool {
		r, err := h.router.CallTool(context.Background(), "x_fake_sleeps", nil, nil)
		return err == nil && strings.Contains(r.Content[0].(*mcp.TextContent).Text, `"cancelled":1`)
	}, 10*time.Second, 10*time.Millisecond)
}

func TestAStepTimesOutAfterItsServersTimeoutAndARunAfterItsDeadline(t *testing.T) {
	h := newHarness(t, workflowrun.Options{StepTimeout: func(tool string) time.Duration {
		if tool == "x_fake_sleep" {
			return 200 * time.Millisecond
		}
		return 0
	}})
	h.declare(wf("slow", "  steps:\n    - {id: nap, tool: x_fake_sleep, args: {ms: 600000}}\n"))
	doc, isError := h.run("slow", nil)
	require.True(t, isError)
	assert.Equal(t, "workflow slow, step nap: the call of x_fake_sleep timed out after 200ms (its server's timeout)", doc["error"])

	h2 := newHarness(t, workflowrun.Options{})
	h2.declare(wf("slow", "  steps:\n    - {id: nap, tool: x_fake_sleep, args: {ms: 600000}}\n"))
	doc, isError = h2.run("slow", map[string]any{"_timeout": "300ms"})
	require.True(t, isError)
	assert.Equal(t, "workflow slow, step nap: calling x_fake_sleep: workflow slow ran past its deadline of 300ms", doc["error"])
}

// The run is held at a gate of mcp-fake's in its first step while the
// definition is replaced and a run of the new one completes; let go, it
// finishes on the definition it started with.
func TestADefinitionChangedMidRunDoesNotChangeTheRun(t *testing.T) {
	h := newHarness(t, workflowrun.Options{})
	h.declare(wf("long", `  steps:
    - {id: held, tool: x_fake_gate, args: {name: mid-run}}
    - {id: second, tool: x_fake_json, args: {version: one}}
`))
	gate := func(tool string) {
		t.Helper()
		res, err := h.router.CallTool(context.Background(), tool, map[string]any{"name": "mid-run"}, nil)
		require.NoError(t, err)
		require.False(t, res.IsError, tool)
	}
	done := make(chan map[string]any)
	go func() { doc, _ := h.run("long", nil); done <- doc }()
	gate("x_fake_gate_waiting") // the run has begun, and waits in its first step

	h.declare(wf("long", "  steps:\n    - {id: other, tool: x_fake_json, args: {version: two}}\n"))
	doc, isError := h.run("long", nil)
	require.False(t, isError)
	assert.Equal(t, "two", doc["version"], "the new definition is in force: a run begun now takes it")

	gate("x_fake_gate_open")
	doc = <-done
	assert.Equal(t, "one", doc["version"], "the held run finished on the definition it started with")
	steps := stepsOf(t, doc)
	assert.Equal(t, "completed", steps["second"]["status"])
	assert.NotContains(t, steps, "other")
}

func TestProgressFromParallelStepsReachesTheCaller(t *testing.T) {
	h := newHarness(t, workflowrun.Options{})
	h.declare(wf("busy", `  steps:
    - id: fan
      parallel:
        - {id: a, tool: x_fake_sleep, args: {ms: 350}}
        - {id: b, tool: x_fake_sleep, args: {ms: 350}}
`))
	var mu sync.Mutex
	n := 0
	res, err := h.router.CallTool(context.Background(), "workflow_busy", nil, func(*mcp.ProgressNotificationParams) { mu.Lock(); n++; mu.Unlock() })
	require.NoError(t, err)
	require.False(t, res.IsError)
	mu.Lock()
	defer mu.Unlock()
	assert.GreaterOrEqual(t, n, 2, "each sleeping sub-step reported progress")
}
