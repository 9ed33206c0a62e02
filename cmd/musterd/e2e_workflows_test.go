package main

// End-to-end tests of workflows: the real musterd binary runs workflows
// against real MCP servers (bin/mcp-fake and npm's server-everything),
// called by a real MCP client (the Go SDK's) on musterd's MCP endpoint;
// executions are read back through MCP, the HTTP API and the CLI.

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/musterd/musterd/internal/npmtest"
	"github.com/musterd/musterd/internal/proctest"
	"github.com/musterd/musterd/pkg/api/types"
	"github.com/musterd/musterd/pkg/coretools"
	"github.com/musterd/musterd/pkg/workflowrun"
)

// waitTool waits until the daemon lists (or, with present false, no
// longer lists) tool.
func waitTool(t *testing.T, s *mcp.ClientSession, tool string, present bool) {
	t.Helper()
	eventually(t, fmt.Sprintf("tool %s listed: %v", tool, present), func() bool { return hasTool(t, s, tool) == present })
}

func stepStatuses(doc map[string]any) map[string]string {
	out := map[string]string{}
	steps, _ := doc["steps"].([]any)
	for _, s := range steps {
		m := s.(map[string]any)
		out[m["id"].(string)] = m["status"].(string)
	}
	return out
}

const e2eWorkflows = `apiVersion: muster.giantswarm.io/v1alpha1
kind: Workflow
metadata:
  name: deploy
spec:
  description: plans, then applies when the plan says so
  args:
    env: {type: string, default: staging, description: where}
    replicas: {type: integer, default: 2}
  steps:
    - id: plan
      tool: x_fake_json
      args: {env: "{{ .input.env }}", replicas: "{{ .input.replicas }}", items: [{name: web}]}
    - id: prodOnly
      tool: x_fake_json
      args: {approved: true}
      condition:
        template: '{{ eq .input.env "prod" }}'
    - id: apply
      tool: x_fake_json
      args: {what: "{{ (index .results.plan.items 0).name }}", count: "{{ .results.plan.replicas }}"}
      condition:
        fromStep: plan
        expect:
          jsonPath: {"items[0].name": web, env: "{{ .input.env }}"}
  output:
    env: "{{ .results.plan.env }}"
    applied: "{{ .results.apply.what }}"
    count: "{{ .results.apply.count }}"
---
apiVersion: muster.giantswarm.io/v1alpha1
kind: Workflow
metadata:
  name: loop
spec:
  args:
    hosts: {type: array, required: true}
  steps:
    - id: each
      forEach:
        items: "{{ .input.hosts }}"
        as: host
        steps:
          - {id: ping, tool: x_fake_json, args: {host: "{{ .vars.host }}", n: "{{ .vars.host_index }}"}}
  output:
    first: "{{ .results.ping_0.host }}"
    second: "{{ .results.ping_1.n }}"
---
apiVersion: muster.giantswarm.io/v1alpha1
kind: Workflow
metadata:
  name: fan
spec:
  steps:
    - id: group
      parallel:
        - {id: a, tool: x_fake_sleep, args: {ms: 100}}
        - {id: b, tool: x_fake_json, args: {v: b}}
    - id: join
      tool: x_fake_json
      args: {got: "{{ .results.a.slept }}/{{ .results.b.v }}"}
---
apiVersion: muster.giantswarm.io/v1alpha1
kind: Workflow
metadata:
  name: tolerant
spec:
  steps:
    - {id: flaky, tool: x_fake_fail, allow_failure: true}
    - {id: after, tool: x_fake_json, args: {flakyFailed: "{{ .results.flaky.isError }}"}}
---
apiVersion: muster.giantswarm.io/v1alpha1
kind: Workflow
metadata:
  name: rollback
spec:
  steps:
    - {id: create, tool: x_fake_json, args: {id: 7}}
    - {id: boom, tool: x_fake_fail}
  onFailure:
    - {id: undo, tool: x_fake_json, args: {deleted: "{{ .results.create.id }}"}}
---
apiVersion: muster.giantswarm.io/v1alpha1
kind: Workflow
metadata:
  name: outer
spec:
  steps:
    - {id: call, tool: workflow_inner, args: {x: 21}}
    - {id: use, tool: x_fake_json, args: {y: "{{ .results.call.y }}"}}
---
apiVersion: muster.giantswarm.io/v1alpha1
kind: Workflow
metadata:
  name: inner
spec:
  args:
    x: {type: number, required: true}
  steps:
    - {id: double, tool: x_fake_json, args: {y: "{{ mul .input.x 2 }}"}}
---
apiVersion: muster.giantswarm.io/v1alpha1
kind: Workflow
metadata:
  name: ping
spec:
  steps:
    - {id: s, tool: workflow_pong}
---
apiVersion: muster.giantswarm.io/v1alpha1
kind: Workflow
metadata:
  name: pong
spec:
  steps:
    - {id: s, tool: workflow_ping}
---
apiVersion: muster.giantswarm.io/v1alpha1
kind: Workflow
metadata:
  name: slow
spec:
  steps:
    - {id: nap, tool: x_fake_sleep, args: {ms: 600000}}
`

func TestE2EWorkflowsRun(t *testing.T) {
	e := startFS(t)
	e.write(t, "mcpservers/fake.yaml", mcpServerYAML("fake", stdioSpec("-tools", "json,fail,sleep,sleeps")...))
	e.write(t, "workflows/all.yaml", e2eWorkflows)
	// Without server-everything (or node) the run goes on; only the subtest
	// that needs it skips (under make test, MUSTERD_REQUIRE_NPM=1 fails it).
	everything, npmErr := npmtest.Lookup(t, npmtest.ServerEverythingPackage)
	if npmErr == nil {
		e.write(t, "mcpservers/everything.yaml", mcpServerYAML("everything", "type: stdio", "autoStart: true",
			"command: "+yamlValue(everything), `args: ["stdio"]`))
		e.write(t, "workflows/weather.yaml", `apiVersion: muster.giantswarm.io/v1alpha1
kind: Workflow
metadata:
  name: weather
spec:
  args:
    city: {type: string, default: Chicago}
  steps:
    - {id: weather, tool: x_everything_get-structured-content, args: {location: "{{ .input.city }}"}}
    - id: sum
      tool: x_everything_get-sum
      args: {a: "{{ .results.weather.temperature }}", b: "{{ .results.weather.humidity }}"}
      condition:
        fromStep: weather
        expect:
          jsonPath: {conditions: "Light rain / drizzle"}
    - {id: say, tool: x_everything_echo, args: {message: "{{ .results.weather.conditions }}; {{ .results.sum }}"}}
  output:
    said: "{{ .results.say }}"
`)
	}
	s := e.directClient(t, nil)
	for _, wf := range []string{"deploy", "loop", "fan", "tolerant", "rollback", "outer", "inner", "slow"} {
		waitTool(t, s, "workflow_"+wf, true)
	}

	t.Run("input with defaults, a result as JSON and through jsonPath, a condition both ways, an output template", func(t *testing.T) {
		doc, isError := callJSON(t, s, "workflow_deploy", nil)
		require.False(t, isError, "%v", doc)
		assert.Equal(t, map[string]any{"env": "staging", "applied": "web", "count": 2.0}, outputOf(t, doc))

		doc, isError = callJSON(t, s, "workflow_deploy", map[string]any{"env": "prod", "_debug": true})
		require.False(t, isError, "%v", doc)
		assert.Equal(t, map[string]string{"plan": "completed", "prodOnly": "completed", "apply": "completed"}, stepStatuses(doc))
		assert.Equal(t, map[string]any{"env": "prod", "replicas": 2.0}, doc["input"])

		doc, _ = callJSON(t, s, "workflow_deploy", map[string]any{"_debug": true})
		assert.Equal(t, "skipped", stepStatuses(doc)["prodOnly"], "the template condition held for prod only")
	})

	t.Run("as muster start workflow runs it: call_tool on /mcp, every argument as text", func(t *testing.T) {
		ms := e.mcpClient(t, "/mcp", "2024-11-05", nil)
		text, isError := musterCall(t, ms, "workflow_deploy", map[string]any{"env": "prod", "replicas": "3"})
		require.False(t, isError, text)
		var doc map[string]any
		require.NoError(t, json.Unmarshal([]byte(text), &doc))
		assert.Equal(t, map[string]any{"env": "prod", "applied": "web", "count": 3.0}, outputOf(t, doc))
	})

	t.Run("forEach with its indexed results", func(t *testing.T) {
		doc, isError := callJSON(t, s, "workflow_loop", map[string]any{"hosts": []any{"a", "b"}})
		require.False(t, isError, "%v", doc)
		assert.Equal(t, map[string]any{"first": "a", "second": 1.0}, outputOf(t, doc))
	})

	t.Run("parallel", func(t *testing.T) {
		doc, isError := callJSON(t, s, "workflow_fan", nil)
		require.False(t, isError, "%v", doc)
		assert.Equal(t, "100/b", doc["got"])
	})

	t.Run("allowFailure", func(t *testing.T) {
		doc, isError := callJSON(t, s, "workflow_tolerant", nil)
		require.False(t, isError, "%v", doc)
		assert.Equal(t, true, doc["flakyFailed"])
		assert.Equal(t, "failed", stepStatuses(doc)["flaky"])
	})

	t.Run("onFailure cleanup", func(t *testing.T) {
		doc, isError := callJSON(t, s, "workflow_rollback", nil)
		require.True(t, isError)
		assert.Equal(t, "failed", doc["status"])
		assert.Equal(t, "workflow rollback, step boom: x_fake_fail returned an error: failed as asked: {}", doc["error"])
		assert.Equal(t, map[string]string{"create": "completed", "boom": "failed", "undo": "completed"}, stepStatuses(doc))
	})

	t.Run("a workflow calling another", func(t *testing.T) {
		doc, isError := callJSON(t, s, "workflow_outer", nil)
		require.False(t, isError, "%v", doc)
		assert.Equal(t, 42.0, doc["y"])
	})

	t.Run("a cycle refused", func(t *testing.T) {
		r, ok := e.resource(t, "workflows", "ping")
		require.True(t, ok)
		assert.False(t, r.Status.Valid)
		assert.Contains(t, r.Status.ValidationErrors, "calls itself: ping → pong → ping")
		assert.False(t, hasTool(t, s, "workflow_ping"), "an invalid workflow is no tool")
		// Called as muster's CLI calls it (call_tool on /mcp), it fails at
		// once, saying why.
		ms := e.mcpClient(t, "/mcp", "2024-11-05", nil)
		text, isError := musterCall(t, ms, "workflow_ping", nil)
		assert.True(t, isError)
		assert.Equal(t, "workflow ping is not available (calls itself: ping → pong → ping)", text)
		// core_workflow_list still lists it, unavailable.
		text, isError = musterCall(t, ms, "core_workflow_list", nil)
		require.False(t, isError, text)
		assert.Contains(t, text, `"name":"ping"`)
		var list struct {
			Workflows []struct {
				Name      string
				Available bool
			}
		}
		require.NoError(t, json.Unmarshal([]byte(text), &list))
		for _, w := range list.Workflows {
			if w.Name != "weather" { // waited for below: server-everything starts slowly
				assert.Equal(t, w.Name != "ping" && w.Name != "pong", w.Available, w.Name)
			}
		}
	})

	t.Run("server-everything", func(t *testing.T) {
		if npmErr != nil {
			t.Skip(npmErr.Error())
		}
		waitTool(t, s, "workflow_weather", true)
		doc, isError := callJSON(t, s, "workflow_weather", nil)
		require.False(t, isError, "%v", doc)
		assert.Equal(t, map[string]any{"said": "Echo: Light rain / drizzle; The sum of 36 and 82 is 118."}, outputOf(t, doc))
	})

	t.Run("cancellation mid-run cancels the server's call", func(t *testing.T) {
		progressed := make(chan struct{})
		var once sync.Once
		ps := e.directClient(t, func(*mcp.ProgressNotificationParams) { once.Do(func() { close(progressed) }) })
		callCtx, cancel := context.WithTimeout(context.Background(), callDeadline)
		done := make(chan error, 1)
		go func() {
			params := &mcp.CallToolParams{Name: "workflow_slow"}
			params.SetProgressToken("slow-1")
			_, err := ps.CallTool(callCtx, params)
			done <- err
		}()
		select {
		case <-progressed: // the server sleeps, and its progress came through the workflow
		case <-time.After(e2eDeadline):
			t.Fatal("no progress came through the workflow")
		}
		cancel()
		select {
		case err := <-done:
			require.Error(t, err)
		case <-time.After(e2eDeadline):
			t.Fatal("a workflow call the client cancelled does not return")
		}
		eventually(t, "the server saw its call cancelled", func() bool {
			text, _ := callTool(t, s, "x_fake_sleeps", nil)
			return strings.Contains(text, `"cancelled":1`)
		})
		eventually(t, "the execution failed, cancelled", func() bool {
			list, _ := callJSON(t, s, coretools.ToolExecutionList, map[string]any{"workflow_name": "slow"})
			execs, _ := list["executions"].([]any)
			if len(execs) != 1 {
				return false
			}
			ex := execs[0].(map[string]any)
			return ex["status"] == "failed" && ex["error"] == "workflow slow, step nap: calling x_fake_sleep: the run was cancelled"
		})
	})

	t.Run("execution list and get, and the events and metrics of runs", func(t *testing.T) {
		var list types.ExecutionList
		text, isError := callTool(t, s, coretools.ToolExecutionList, map[string]any{"workflow_name": "deploy", "limit": 2})
		require.False(t, isError, text)
		require.NoError(t, json.Unmarshal([]byte(text), &list))
		assert.Equal(t, 4, list.Total)
		assert.True(t, list.HasMore)
		id := list.Executions[0].ExecutionID
		var exec types.Execution
		text, isError = callTool(t, s, coretools.ToolExecutionGet, map[string]any{"execution_id": id, "step_id": "prodOnly"})
		require.False(t, isError, text)
		require.NoError(t, json.Unmarshal([]byte(text), &exec))
		require.Len(t, exec.Steps, 1)
		assert.Equal(t, "completed", exec.Steps[0].Status, "the newest deploy was for prod")

		out, code := e.cli(t, "get", "executions", "--workflow", "rollback")
		require.Equal(t, 0, code, out)
		assert.Regexp(t, `(?m)^[0-9a-f-]{36}\s+rollback\s+failed\s+3\s`, out)
		out, code = e.cli(t, "describe", "execution/"+id)
		require.Equal(t, 0, code, out)
		assert.Contains(t, out, "Workflow:     deploy")

		_, body := e.get(t, "/metrics")
		assert.Contains(t, body, `musterd_workflow_executions_total{status="completed",workflow="deploy"} 4`)
		assert.Contains(t, body, `musterd_workflow_executions_total{status="failed",workflow="rollback"} 1`)
		assert.Contains(t, body, `musterd_workflow_execution_duration_seconds_count{workflow="loop"} 1`)
	})

	// musterd (built with -race) stops cleanly: exit 0, no race reported.
	e.stopWith(t, syscall.SIGTERM, e2eDeadline)
}

// musterd events shows a line for each execution's start and end, live.
func TestE2EEventsShowEachExecutionsStartAndEnd(t *testing.T) {
	e := startFS(t)
	e.write(t, "mcpservers/fake.yaml", mcpServerYAML("fake", stdioSpec("-tools", "json")...))
	e.write(t, "workflows/hello.yaml", "apiVersion: muster.giantswarm.io/v1alpha1\nkind: Workflow\nmetadata:\n  name: hello\nspec:\n  steps:\n    - {id: s, tool: x_fake_json}\n")
	s := e.directClient(t, nil)
	waitTool(t, s, "workflow_hello", true)

	cmd := exec.Command(binary, "events", "-f", "--type", "WorkflowExecutionStarted,WorkflowExecutionFinished")
	cmd.Env = append(os.Environ(), "MUSTERD_SERVER=http://"+e.addr)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	lines := make(chan string, 64)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	// Subscribed: the command prints nothing until an event comes, so
	// probe runs until the line of one shows (each run's lines come after
	// it returns, once the stream is subscribed); the runs' lines that
	// follow are skipped below by execution id.
	eventually(t, "musterd events -f prints a probe run's line", func() bool {
		select {
		case l, ok := <-lines:
			require.True(t, ok, "musterd events ended")
			return strings.Contains(l, "WorkflowExecution")
		default:
		}
		_, isError := callJSON(t, s, "workflow_hello", nil)
		require.False(t, isError)
		return false
	})

	// The run under test: its start, then its end.
	doc, isError := callJSON(t, s, "workflow_hello", nil)
	require.False(t, isError)
	id := doc["execution_id"].(string)
	var got []string
	deadline := time.After(e2eDeadline)
	for len(got) < 2 {
		select {
		case l, ok := <-lines:
			require.True(t, ok, "musterd events ended")
			if strings.Contains(l, "execution="+id) {
				got = append(got, l)
			}
		case <-deadline:
			t.Fatalf("execution %s: %d of its start and end lines within %s: %q", id, len(got), e2eDeadline, got)
		}
	}
	assert.Regexp(t, `WorkflowExecutionStarted\s+workflows/default/hello\s+execution=`+id+`$`, got[0])
	assert.Regexp(t, `WorkflowExecutionFinished\s+workflows/default/hello\s+execution=`+id+` status=completed duration=\S+$`, got[1])
}

// A server killed while a workflow's call waits on it fails the run
// clearly, naming the step; the daemon restarts the server.
func TestE2EAServerKilledMidRunFailsTheRunClearly(t *testing.T) {
	e := startFS(t)
	marker := newMarker()
	e.write(t, "mcpservers/victim.yaml", mcpServerYAML("victim", stdioSpec("-tools", "sleep,sleeps,"+marker)...))
	e.write(t, "workflows/doomed.yaml", "apiVersion: muster.giantswarm.io/v1alpha1\nkind: Workflow\nmetadata:\n  name: doomed\nspec:\n  steps:\n    - {id: nap, tool: x_victim_sleep, args: {ms: 600000}}\n")
	s := e.directClient(t, nil)
	waitTool(t, s, "workflow_doomed", true)
	first := theServerProc(t, marker)

	run := callAsync(s, "workflow_doomed", nil)
	eventually(t, "the workflow's call is running on the server", func() bool {
		text, _ := callTool(t, s, "x_victim_sleeps", nil)
		return strings.Contains(text, `"running":1`)
	})
	require.NoError(t, proctest.Kill(first.pid))
	doc := run.wait(t, "the run did not end after its server was killed")
	assert.Equal(t, "failed", doc["status"], "%v", doc)
	assert.Contains(t, doc["error"], "workflow doomed, step nap: calling x_victim_sleep: ")
	e.waitServer(t, "victim", "is Running again", func(s serverObject) bool { return s.Status.RestartCount >= 1 })
}

// Executions survive a restart of musterd; one in progress when it stopped
// is failed, saying so.
func TestE2EExecutionsSurviveARestart(t *testing.T) {
	config, state := t.TempDir(), t.TempDir()
	for _, d := range []string{"mcpservers", "workflows"} {
		require.NoError(t, os.MkdirAll(filepath.Join(config, d), 0o755))
	}
	start := func() *fsEnv {
		e := &fsEnv{config: config, state: state}
		e.runningDaemon = startDaemon(t, "-config-dir", config, "-state-dir", state, "-debounce", "50ms")
		e.waitReady(t)
		return e
	}
	e := start()
	e.write(t, "mcpservers/fake.yaml", mcpServerYAML("fake", stdioSpec("-tools", "json,sleep,sleeps")...))
	e.write(t, "workflows/w.yaml", "apiVersion: muster.giantswarm.io/v1alpha1\nkind: Workflow\nmetadata:\n  name: quick\nspec:\n  steps:\n    - {id: s, tool: x_fake_json, args: {v: 1}}\n---\napiVersion: muster.giantswarm.io/v1alpha1\nkind: Workflow\nmetadata:\n  name: slow\nspec:\n  steps:\n    - {id: nap, tool: x_fake_sleep, args: {ms: 600000}}\n")
	s := e.directClient(t, nil)
	waitTool(t, s, "workflow_quick", true)
	waitTool(t, s, "workflow_slow", true)
	doc, isError := callJSON(t, s, "workflow_quick", nil)
	require.False(t, isError)
	quickID := doc["execution_id"].(string)
	go func() {
		// Ended by the kill of musterd below; bounded all the same.
		ctx, cancel := context.WithTimeout(context.Background(), callDeadline)
		defer cancel()
		_, _ = s.CallTool(ctx, &mcp.CallToolParams{Name: "workflow_slow"})
	}()
	eventually(t, "the slow run is on the server", func() bool {
		text, _ := callTool(t, s, "x_fake_sleeps", nil)
		return strings.Contains(text, `"running":1`)
	})
	out, code := e.cli(t, "get", "executions", "--status", "inprogress", "-o", "json")
	require.Equal(t, 0, code, out)
	var inProgress types.ExecutionList
	require.NoError(t, json.Unmarshal([]byte(out), &inProgress))
	require.Equal(t, 1, inProgress.Total)
	slowID := inProgress.Executions[0].ExecutionID
	// A crash: nothing is written on the way out.
	require.NoError(t, e.cmd.Process.Kill())
	<-e.exited
	_ = s.Close()

	e = start()
	out, code = e.cli(t, "get", "executions", "-o", "json")
	require.Equal(t, 0, code, out)
	var list types.ExecutionList
	require.NoError(t, json.Unmarshal([]byte(out), &list))
	require.Equal(t, 2, list.Total, out)
	out, code = e.cli(t, "get", "executions", quickID, "-o", "json")
	require.Equal(t, 0, code, out)
	var quick types.Execution
	require.NoError(t, json.Unmarshal([]byte(out), &quick))
	assert.Equal(t, "completed", quick.Status)
	assert.Equal(t, map[string]any{"v": 1.0}, quick.Steps[0].Result)

	out, code = e.cli(t, "describe", "execution/"+slowID)
	require.Equal(t, 0, code, out)
	assert.Contains(t, out, "Status:       failed")
	assert.Contains(t, out, "Error:        "+workflowrun.ReasonInterrupted)

	s = e.directClient(t, nil)
	var got types.Execution
	text, isError := callTool(t, s, coretools.ToolExecutionGet, map[string]any{"execution_id": quickID, "include_steps": false})
	require.False(t, isError, text)
	require.NoError(t, json.Unmarshal([]byte(text), &got))
	assert.Equal(t, "completed", got.Status)
	assert.Empty(t, got.Steps)
}

// A server restarted by a spec change while a workflow's call runs on it
// drains: the call finishes on the old instance, the next step's call
// waits for the new one, and the run completes. The restart certainly
// lands while the first step runs: the file changes once the server
// counts the step's call running, and musterd's log says its restart
// drains one call (the test calls nothing else on the server by then);
// the first step completes (a call cut off would fail it), and the next
// step's result names the new server's pid.
func TestE2EASpecChangeMidRunDrainsAndTheRunFinishes(t *testing.T) {
	e := startFS(t)
	marker := newMarker()
	spec := func(extra ...string) string {
		return mcpServerYAML("svc", append(stdioSpec("-tools", "sleep,sleeps,"+marker, "-slow-tool", "work"), extra...)...)
	}
	e.write(t, "mcpservers/svc.yaml", spec())
	// nap sleeps 6 s: time enough for the restart to begin on a loaded
	// machine, and well inside the 10 s drain. after's result (mcp-fake's
	// slow tool) names the pid of the server that ran it.
	e.write(t, "workflows/steady.yaml", "apiVersion: muster.giantswarm.io/v1alpha1\nkind: Workflow\nmetadata:\n  name: steady\nspec:\n  steps:\n"+
		"    - {id: nap, tool: x_svc_sleep, args: {ms: 6000}}\n"+
		"    - {id: after, tool: x_svc_work, args: {steps: 1, interval: 1ms}}\n"+
		"  output:\n    slept: \"{{ .results.nap.slept }}\"\n    afterPid: \"{{ .results.after.pid }}\"\n")
	s := e.directClient(t, nil)
	waitTool(t, s, "workflow_steady", true)
	first := theServerProc(t, marker)

	run := callAsync(s, "workflow_steady", map[string]any{"_debug": true})
	eventually(t, "the workflow's first call is running on the server", func() bool {
		text, _ := callTool(t, s, "x_svc_sleeps", nil)
		return strings.Contains(text, `"running":1`)
	})
	// From here on the test calls nothing on svc: the one call in flight
	// is nap's.
	e.write(t, "mcpservers/svc.yaml", spec(`env: {CHANGED: "1"}`))
	draining := regexp.MustCompile(`msg="mcp server: draining its calls before a restart" [^\n]*key=\S*default/svc calls=1 `)
	// The restart found nap's call in flight on the old server: it drains
	// it rather than stopping the server under it.
	eventually(t, "musterd drains the old server's one call", func() bool { return draining.MatchString(e.stderr.String()) })

	doc := run.wait(t, "the run did not end")
	require.Equal(t, "completed", doc["status"], "%v", doc)
	assert.Equal(t, map[string]string{"nap": "completed", "after": "completed"}, stepStatuses(doc))
	out, _ := doc["output"].(map[string]any)
	assert.Equal(t, 6000.0, out["slept"], "nap finished on the old server, drained: %v", doc)
	second := theServerProc(t, marker, first)
	assert.Equal(t, float64(second.pid), out["afterPid"], "after ran on the new server: %v", doc)
	assert.NotEqual(t, float64(first.pid), out["afterPid"])
	assert.False(t, first.alive(), "the old server is stopped after its drain")
}

// A workflow becoming valid or invalid is a tool appearing or going on
// /mcp/direct, and its clients are told (list_changed).
func TestE2EAWorkflowTurningValidOrInvalidIsAnnounced(t *testing.T) {
	e := startFS(t)
	e.write(t, "workflows/needy.yaml", "apiVersion: muster.giantswarm.io/v1alpha1\nkind: Workflow\nmetadata:\n  name: needy\nspec:\n  steps:\n    - {id: s, tool: x_late_json}\n")
	changed := make(chan struct{}, 16)
	s := e.mcpClient(t, "/mcp/direct", "", &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { notify(changed, struct{}{}) },
	})
	e.waitWorkflow(t, "needy", "Synced", "")
	require.False(t, hasTool(t, s, "workflow_needy"))
	text, isError := musterCall(t, e.mcpClient(t, "/mcp", "2024-11-05", nil), "workflow_needy", nil)
	assert.True(t, isError)
	assert.Equal(t, "workflow needy is not available (missing required tools: x_late_json)", text)

	drainSignals(changed)
	e.write(t, "mcpservers/late.yaml", mcpServerYAML("late", stdioSpec("-tools", "json")...))
	eventually(t, "list_changed, and workflow_needy listed", func() bool {
		select {
		case <-changed:
		default:
			return false
		}
		return hasTool(t, s, "workflow_needy")
	})
	doc, isError := callJSON(t, s, "workflow_needy", nil)
	require.False(t, isError, "%v", doc)

	// Only a list_changed sent from now on may count for the removal.
	drainSignals(changed)
	e.remove(t, "mcpservers/late.yaml")
	eventually(t, "list_changed, and workflow_needy gone", func() bool {
		select {
		case <-changed:
		default:
			return false
		}
		return !hasTool(t, s, "workflow_needy")
	})

	// A workflow calling one not declared yet turns valid, with no edit of
	// its own, once the other is declared; and invalid when that one goes.
	e.write(t, "mcpservers/late.yaml", mcpServerYAML("late", stdioSpec("-tools", "json")...))
	e.write(t, "workflows/caller.yaml", "apiVersion: muster.giantswarm.io/v1alpha1\nkind: Workflow\nmetadata:\n  name: caller\nspec:\n  steps:\n    - {id: s, tool: workflow_callee}\n")
	eventually(t, "caller is invalid, workflow_callee missing", func() bool {
		r, ok := e.resource(t, "workflows", "caller")
		return ok && r.Reconcile.State == "Synced" && slices.Equal(r.Status.MissingTools, []string{"workflow_callee"})
	})
	e.write(t, "workflows/callee.yaml", "apiVersion: muster.giantswarm.io/v1alpha1\nkind: Workflow\nmetadata:\n  name: callee\nspec:\n  steps:\n    - {id: s, tool: x_late_json, args: {from: callee}}\n")
	waitTool(t, s, "workflow_caller", true)
	// caller's verdict needs callee declared, not runnable: callee runs once
	// late, started side by side with the others, offers x_late_json.
	waitTool(t, s, "workflow_callee", true)
	doc, isError = callJSON(t, s, "workflow_callee", nil)
	require.False(t, isError, "%v", doc)
	doc, isError = callJSON(t, s, "workflow_caller", nil)
	require.False(t, isError, "%v", doc)
	e.remove(t, "workflows/callee.yaml")
	waitTool(t, s, "workflow_caller", false)
}
