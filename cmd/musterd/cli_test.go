package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/musterd/musterd/pkg/api"
	"github.com/musterd/musterd/pkg/api/apitest"
	"github.com/musterd/musterd/pkg/apis/muster/v1alpha1"
	"github.com/musterd/musterd/pkg/events"
)

const (
	gitServer = `apiVersion: muster.giantswarm.io/v1alpha1
kind: MCPServer
metadata:
  name: git
  labels: {team: tools, tier: core}
spec:
  type: stdio
  command: mcp-git
  env:
    GITHUB_TOKEN: ghp_0123456789abcdef
`
	searchServer = `apiVersion: muster.giantswarm.io/v1alpha1
kind: MCPServer
metadata:
  name: search
  namespace: team-a
spec:
  type: streamable-http
  url: https://search.example.com/mcp
`
	greetWorkflow = `apiVersion: muster.giantswarm.io/v1alpha1
kind: Workflow
metadata:
  name: greet
spec:
  description: Say hello
  steps:
    - id: hello
      tool: echo
      args:
        message: "hello, {{.input.who}}"
`
)

var (
	gitKey    = events.NewKey(v1alpha1.KindMCPServer, "", "git")
	searchKey = events.NewKey(v1alpha1.KindMCPServer, "team-a", "search")
	greetKey  = events.NewKey(v1alpha1.KindWorkflow, "", "greet")
)

func meta(correlationID string) events.Meta {
	return events.Meta{Time: events.Now(), CorrelationID: correlationID}
}

// result is what a CLI run left.
type result struct {
	code           int
	stdout, stderr string
}

// startCLI runs a client subcommand against f on its own goroutine; the
// function returned waits for it. ctx, if not nil, is the run's context
// (an interrupt is its cancellation).
func startCLI(f *apitest.Fixture, ctx context.Context, env map[string]string, args ...string) func() result {
	if ctx == nil {
		ctx = context.Background()
	}
	if env == nil {
		env = map[string]string{envServer: f.URL}
	}
	var stdout, stderr bytes.Buffer
	c := &cli{stdout: &stdout, stderr: &stderr, getenv: func(k string) string { return env[k] }, http: f.HTTP}
	done := make(chan int, 1)
	go func() { done <- c.run(ctx, args[0], args[1:]) }()
	return func() result {
		code := <-done
		return result{code, stdout.String(), stderr.String()}
	}
}

func runCLI(f *apitest.Fixture, args ...string) result {
	return startCLI(f, nil, nil, args...)()
}

// scenario declares git (Synced 90s ago), search (in Error, retrying) and
// greet (Synced 5s ago), with the statuses their reconcilers would report.
func scenario(t *testing.T) *apitest.Fixture {
	f := apitest.New(t, func(o *api.Options) { o.Token = "t0ken" })
	f.Declare("mcpservers/git.yaml", gitServer)
	f.Declare("mcpservers/search.yaml", searchServer)
	f.Declare("workflows/greet.yaml", greetWorkflow)
	f.SetResourceStatus(gitKey, v1alpha1.MCPServerStatus{State: v1alpha1.MCPServerStateRunning})
	f.SetResourceStatus(greetKey, v1alpha1.WorkflowStatus{Valid: true, StepCount: 1, ReferencedTools: []string{"echo"}})
	f.Publish(events.ResourceSynced{Meta: meta("c-git"), Key: gitKey, Attempt: 1})
	time.Sleep(85 * time.Second)
	f.Publish(events.ResourceFailed{Meta: meta("c-search"), Key: searchKey, Attempt: 3, Error: "dial tcp: connection refused\nretrying",
		NextRetry: time.Now().Add(20 * time.Second)})
	f.Publish(events.ResourceSynced{Meta: meta("c-greet"), Key: greetKey, Attempt: 1})
	time.Sleep(5 * time.Second)
	return f
}

func TestCLIGetPrintsTablesLikeKubectl(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := scenario(t)
		for _, c := range []struct {
			args []string
			want string
		}{
			{[]string{"get"}, `NAMESPACE   NAME               TYPE              SERVER    STATE    LAST RECONCILE
default     mcpserver/git      stdio             Running   Synced   90s
team-a      mcpserver/search   streamable-http   <none>    Error    5s

NAMESPACE   NAME             VALID   STEPS   STATE    LAST RECONCILE
default     workflow/greet   true    1       Synced   5s
`},
			{[]string{"get", "mcps"}, `NAMESPACE   NAME     TYPE              SERVER    STATE    LAST RECONCILE
default     git      stdio             Running   Synced   90s
team-a      search   streamable-http   <none>    Error    5s
`},
			{[]string{"get", "MCPServer", "-n", "team-a"}, `NAME     TYPE              SERVER   STATE   LAST RECONCILE
search   streamable-http   <none>   Error   5s
`},
			{[]string{"get", "wf", "greet"}, `NAME    VALID   STEPS   STATE    LAST RECONCILE
greet   true    1       Synced   5s
`},
			{[]string{"get", "workflow/greet", "-o", "table"}, `NAME    VALID   STEPS   STATE    LAST RECONCILE
greet   true    1       Synced   5s
`},
		} {
			assert.Equal(t, result{code: 0, stdout: c.want}, runCLI(f, c.args...), c.args)
		}
		assert.Equal(t, result{code: 0, stderr: "No resources found.\n"}, runCLI(f, "get", "workflows", "-n", "elsewhere"))
	})
}

func TestCLIGetPrintsJSONAndYAML(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := scenario(t)
		greet, _ := f.Index.Get(greetKey)
		search, _ := f.Index.Get(searchKey)
		assert.Equal(t, result{code: 0, stdout: `{
  "apiVersion": "muster.giantswarm.io/v1alpha1",
  "kind": "Workflow",
  "metadata": {
    "name": "greet",
    "namespace": "default",
    "hash": "` + greet.Hash + `"
  },
  "spec": {
    "description": "Say hello",
    "steps": [
      {
        "id": "hello",
        "tool": "echo",
        "args": {
          "message": "hello, {{.input.who}}"
        }
      }
    ]
  },
  "status": {
    "valid": true,
    "referencedTools": [
      "echo"
    ],
    "stepCount": 1
  },
  "reconcile": {
    "state": "Synced",
    "lastReconcileTime": "2000-01-01T00:01:25Z",
    "retryCount": 0,
    "correlationID": "c-greet"
  },
  "files": [
    "workflows/greet.yaml"
  ]
}
`}, runCLI(f, "get", "wf/greet", "-o", "json"))

		assert.Equal(t, result{code: 0, stdout: `apiVersion: muster.giantswarm.io/v1alpha1
kind: Workflow
metadata:
  name: greet
  namespace: default
  hash: ` + greet.Hash + `
spec:
  description: Say hello
  steps:
    - id: hello
      tool: echo
      args:
        message: hello, {{.input.who}}
status:
  valid: true
  referencedTools:
    - echo
  stepCount: 1
reconcile:
  state: Synced
  lastReconcileTime: "2000-01-01T00:01:25Z"
  retryCount: 0
  correlationID: c-greet
files:
  - workflows/greet.yaml
`}, runCLI(f, "get", "-o", "yaml", "wf", "greet"), "flags may come before the arguments")

		assert.Equal(t, result{code: 0, stdout: `items:
  - apiVersion: muster.giantswarm.io/v1alpha1
    kind: MCPServer
    metadata:
      name: search
      namespace: team-a
      hash: ` + search.Hash + `
    spec:
      type: streamable-http
      url: https://search.example.com/mcp
      timeout: 30
    reconcile:
      state: Error
      lastReconcileTime: "2000-01-01T00:01:25Z"
      lastError: |-
        dial tcp: connection refused
        retrying
      retryCount: 2
      nextRetry: "2000-01-01T00:01:45Z"
      correlationID: c-search
    files:
      - mcpservers/search.yaml
`}, runCLI(f, "get", "-n", "team-a", "-o", "yaml"))

		assert.Equal(t, result{code: 0, stdout: "{\n  \"items\": []\n}\n"}, runCLI(f, "get", "--output=json", "-n", "elsewhere"))
	})
}

func TestCLIDescribeShowsSpecStatusAndReconcileState(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := scenario(t)
		assert.Equal(t, result{code: 0, stdout: `Name:         git
Namespace:    default
Kind:         MCPServer
API Version:  muster.giantswarm.io/v1alpha1
Labels:       team=tools
              tier=core
Annotations:  <none>
Files:        mcpservers/git.yaml
Spec:
  type: stdio
  command: mcp-git
  env:
    GITHUB_TOKEN: '[redacted]'
  timeout: 30
Status:
  state: Running
Reconcile:
  State:           Synced
  Last Reconcile:  2000-01-01T00:00:00Z (90s ago)
  Last Error:      <none>
  Retry Count:     0
  Next Retry:      <none>
  Correlation ID:  c-git
Events:
2000-01-01T00:00:00.000Z  ResourceChanged          mcpservers/default/git  operation=create source=filesystem file=mcpservers/git.yaml
2000-01-01T00:00:00.000Z  StatusSynced             mcpservers/default/git  category=written
2000-01-01T00:00:00.000Z  ResourceSynced           mcpservers/default/git  attempt=1 duration=0s
2000-01-01T00:00:00.000Z  StatusSynced             mcpservers/default/git  category=written
`}, startCLI(f, nil, map[string]string{envServer: f.URL, envToken: "t0ken"}, "describe", "mcps/git")())

		r := runCLI(f, "describe", "mcps/git")
		assert.Equal(t, 0, r.code, r.stderr)
		assert.True(t, strings.HasSuffix(r.stdout, "Correlation ID:  c-git\nEvents:       <the daemon's API token is needed: -token or $MUSTERD_TOKEN>\n"),
			"without the token, the description without its events: %s", r.stdout)

		assert.Equal(t, result{code: 0, stdout: `Name:         search
Namespace:    team-a
Kind:         MCPServer
API Version:  muster.giantswarm.io/v1alpha1
Labels:       <none>
Annotations:  <none>
Files:        mcpservers/search.yaml
Spec:
  type: streamable-http
  url: https://search.example.com/mcp
  timeout: 30
Status:       <none>
Reconcile:
  State:           Error
  Last Reconcile:  2000-01-01T00:01:25Z (5s ago)
  Last Error:      dial tcp: connection refused
                   retrying
  Retry Count:     2
  Next Retry:      2000-01-01T00:01:45Z (in 15s)
  Correlation ID:  c-search
Events:
2000-01-01T00:00:00.000Z  ResourceChanged          mcpservers/team-a/search  operation=create source=filesystem file=mcpservers/search.yaml
2000-01-01T00:00:00.000Z  StatusSynced             mcpservers/team-a/search  category=written
2000-01-01T00:01:25.000Z  ResourceFailed           mcpservers/team-a/search  attempt=3 duration=0s nextRetry=2000-01-01T00:01:45Z error="dial tcp: connection refused\nretrying"
2000-01-01T00:01:25.000Z  StatusSynced             mcpservers/team-a/search  category=written
`}, startCLI(f, nil, map[string]string{envServer: f.URL, envToken: "t0ken"}, "describe", "mcpserver", "search", "--namespace", "team-a")())
	})
}

func TestCLIDescribeOfAFileThatNeverParsedShowsItsError(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := apitest.New(t, nil)
		f.Declare("workflows/broken.yaml", "kind: Workflow\nspec: [\n")
		assert.Equal(t, result{code: 0, stdout: `Name:         broken
Namespace:    default
Kind:         Workflow
API Version:  muster.giantswarm.io/v1alpha1
Labels:       <none>
Annotations:  <none>
Files:        workflows/broken.yaml
Spec:         <none>
Status:       <none>
Reconcile:
  State:           Pending
  Last Reconcile:  <none>
  Last Error:      workflows/broken.yaml:3: invalid YAML: did not find expected node content
  Retry Count:     0
  Next Retry:      <none>
  Correlation ID:  change-1
Events:
2000-01-01T00:00:00.000Z  ResourceChanged          workflows/default/broken  operation=create source=filesystem file=workflows/broken.yaml
2000-01-01T00:00:00.000Z  StatusSynced             workflows/default/broken  category=written
`}, runCLI(f, "describe", "wf/broken"))
	})
}

func TestCLIDescribeEventsFollowsTheResourceUntilInterrupted(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := apitest.New(t, nil)
		f.Declare("workflows/greet.yaml", greetWorkflow)
		ctx, interrupt := context.WithCancel(context.Background())
		done := startCLI(f, ctx, nil, "describe", "wf/greet", "--events")
		synctest.Wait()
		time.Sleep(time.Second)
		f.Publish(events.ReconciliationStarted{Meta: meta("c1"), Key: greetKey, Attempt: 1})
		f.Publish(events.ResourceSynced{Meta: meta("c1"), Key: greetKey, Attempt: 1, Duration: 1500 * time.Microsecond})
		f.Publish(events.ResourceSynced{Meta: meta("c2"), Key: gitKey, Attempt: 1})
		interrupt()
		r := done()
		assert.Equal(t, 0, r.code, r.stderr)
		assert.Equal(t, `Reconcile:
  State:           Pending
  Last Reconcile:  <none>
  Last Error:      <none>
  Retry Count:     0
  Next Retry:      <none>
  Correlation ID:  change-1
Events:
2000-01-01T00:00:00.000Z  ResourceChanged          workflows/default/greet  operation=create source=filesystem file=workflows/greet.yaml
2000-01-01T00:00:00.000Z  StatusSynced             workflows/default/greet  category=written
2000-01-01T00:00:01.000Z  ReconciliationStarted    workflows/default/greet  attempt=1
2000-01-01T00:00:01.000Z  StatusSynced             workflows/default/greet  category=written
2000-01-01T00:00:01.000Z  ResourceSynced           workflows/default/greet  attempt=1 duration=1.5ms
2000-01-01T00:00:01.000Z  StatusSynced             workflows/default/greet  category=written
`, r.stdout[strings.Index(r.stdout, "Reconcile:"):])
	})
}
