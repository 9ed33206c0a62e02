package mcpserve

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/musterd/musterd/pkg/api/types"
	"github.com/musterd/musterd/pkg/apis/muster/v1alpha1"
	"github.com/musterd/musterd/pkg/controls"
	"github.com/musterd/musterd/pkg/events"
	"github.com/musterd/musterd/pkg/statusync"
)

const fakeServer = `apiVersion: muster.giantswarm.io/v1alpha1
kind: MCPServer
metadata: {name: fake}
spec:
  type: stdio
  command: mcp-fake
  args: [--tools, echo]
  toolPrefix: fk
  env:
    GITHUB_TOKEN: ghp_0123456789abcdef
`

const remoteServer = `apiVersion: muster.giantswarm.io/v1alpha1
kind: MCPServer
metadata: {name: remote}
spec:
  type: streamable-http
  url: https://deploy:hunter2@mcp.example.com/mcp
  headers:
    Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.c2VjcmV0
`

const greetWorkflow = `apiVersion: muster.giantswarm.io/v1alpha1
kind: Workflow
metadata: {name: greet}
spec:
  description: Say hello
  steps:
    - id: hello
      tool: x_fk_echo
      args: {message: hi}
`

var (
	fakeKey   = events.NewKey(v1alpha1.KindMCPServer, "", "fake")
	remoteKey = events.NewKey(v1alpha1.KindMCPServer, "", "remote")
	greetKey  = events.NewKey(v1alpha1.KindWorkflow, "", "greet")
	at        = time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
)

// declareAll declares a running server, a failed remote one and a
// workflow, with their observed status and reconcile state.
func declareAll(h *harness) {
	h.declare("/cfg/mcpservers/fake.yaml", fakeServer)
	h.declare("/cfg/mcpservers/remote.yaml", remoteServer)
	h.declare("/cfg/workflows/greet.yaml", greetWorkflow)
	h.observe(fakeKey, v1alpha1.MCPServerStatus{State: v1alpha1.MCPServerStateRunning, LastConnected: &metav1.Time{Time: at}, LastAttempt: &metav1.Time{Time: at}})
	h.observe(remoteKey, v1alpha1.MCPServerStatus{State: v1alpha1.MCPServerStateFailed, ConsecutiveFailures: 3,
		LastError: "connect: 401 Unauthorized (Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.c2VjcmV0)", LastAttempt: &metav1.Time{Time: at},
		NextRetryAfter: &metav1.Time{Time: at.Add(time.Minute)}})
	h.observe(greetKey, v1alpha1.WorkflowStatus{Valid: true})
	h.statuses.m[fakeKey] = statusync.Status{Key: fakeKey, State: statusync.StateSynced, LastReconcileTime: at, CorrelationID: "c-1", ObservedHash: "h1"}
	h.statuses.m[remoteKey] = statusync.Status{Key: remoteKey, State: statusync.StateError, LastError: "connect: 401", RetryCount: 3, NextRetry: at.Add(time.Minute), CorrelationID: "c-2"}
}

func TestCoreMCPServerToolsShowMustersShapeWithSecretsRedacted(t *testing.T) {
	h := newHarness(t, nil)
	declareAll(h)
	cs := h.connect(PathMCP, musterProtocol, nil)
	unwrap := func(tool string, args map[string]any) string {
		res := call(t, cs, "call_tool", map[string]any{"name": tool, "arguments": args})
		var env struct {
			Content []struct{ Text string }
		}
		require.NoError(t, jsonUnmarshal(text(t, res), &env))
		return env.Content[0].Text
	}

	list := unwrap("core_mcpserver_list", nil)
	assert.JSONEq(t, `{"mcpServers":[{"name":"fake","namespace":"default","type":"stdio","command":"mcp-fake","args":["--tools","echo"],
		"env":{"GITHUB_TOKEN":"[redacted]"},"timeout":30,"toolPrefix":"fk","state":"Running","lastAttempt":"2026-11-24T12:00:00Z","toolsCount":2,
		"connectedAt":"2026-11-24T12:00:00Z"}],"total":1,"mode":"filesystem","hiddenFailed":1,
		"hint":"(1 failed servers hidden, use --all to show, --verbose for details)"}`, list)

	all := unwrap("core_mcpserver_list", map[string]any{"showAll": true, "verbose": true})
	assert.Contains(t, all, `"name":"remote"`)
	assert.Contains(t, all, `"consecutiveFailures":3`)
	assert.Contains(t, all, `"nextRetryAfter":"2026-11-24T12:01:00Z"`)
	assert.Contains(t, all, `"statusMessage":"Server failed: connect: 401 Unauthorized (Authorization: [redacted])"`)
	assert.Contains(t, all, `"error":"connect: 401 Unauthorized`)
	assert.Contains(t, all, `"headers":{"Authorization":"[redacted]"}`)
	for _, secret := range []string{"ghp_0123456789abcdef", "hunter2", "eyJhbGciOiJIUzI1NiJ9"} {
		assert.NotContains(t, all, secret)
	}

	get := unwrap("core_mcpserver_get", map[string]any{"name": "fake"})
	assert.Contains(t, get, `"state":"Running"`)
	assert.Contains(t, unwrap("core_mcpserver_get", map[string]any{"name": "default/fake"}), `"name":"fake"`)
	res := call(t, cs, "call_tool", map[string]any{"name": "core_mcpserver_get", "arguments": map[string]any{"name": "ghost"}})
	assert.True(t, res.IsError)
	assert.Contains(t, text(t, res), `Failed to get MCP server: MCPServer \"ghost\" not found`)
}

func TestCoreServiceAndWorkflowTools(t *testing.T) {
	h := newHarness(t, nil)
	declareAll(h)
	cs := h.connect(PathDirect, musterProtocol, nil)
	assert.JSONEq(t, `{"services":[
		{"name":"fake","service_type":"MCPServer","state":"running","health":"healthy","metadata":{"namespace":"default","toolsCount":2,"type":"stdio","toolPrefix":"fk"}},
		{"name":"remote","service_type":"MCPServer","state":"failed","health":"unhealthy","error":"connect: 401 Unauthorized (Authorization: [redacted])","metadata":{"namespace":"default","toolsCount":0,"type":"streamable-http"}}],
		"total":2}`, text(t, call(t, cs, "core_service_list", nil)))
	assert.JSONEq(t, `{"name":"fake","service_type":"MCPServer","state":"running","health":"healthy","metadata":{"namespace":"default","toolsCount":2,"type":"stdio","toolPrefix":"fk"}}`,
		text(t, call(t, cs, "core_service_status", map[string]any{"name": "fake"})))
	res := call(t, cs, "core_service_status", map[string]any{"name": "ghost"})
	assert.True(t, res.IsError)
	assert.Equal(t, `Failed to get service status: service "ghost" not found`, text(t, res))

	assert.JSONEq(t, `{"workflows":[{"name":"greet","available":true,"description":"Say hello"}]}`, text(t, call(t, cs, "core_workflow_list", nil)))
	assert.JSONEq(t, `{"name":"greet","available":true}`, text(t, call(t, cs, "core_workflow_available", map[string]any{"name": "greet"})))
	h.observe(greetKey, v1alpha1.WorkflowStatus{Valid: false, MissingTools: []string{"x_fk_echo"}})
	assert.JSONEq(t, `{"name":"greet","available":false}`, text(t, call(t, cs, "core_workflow_available", map[string]any{"name": "greet"})), "the reconciler's verdict")

	got := decode[struct {
		Workflow map[string]any
		YAML     string
	}](t, call(t, cs, "core_workflow_get", map[string]any{"name": "greet"}))
	assert.Equal(t, "greet", got.Workflow["name"])
	assert.Equal(t, "Say hello", got.Workflow["description"])
	assert.Equal(t, []any{"x_fk_echo"}, got.Workflow["missingTools"])
	assert.Contains(t, got.YAML, "kind: Workflow\n")
	assert.Contains(t, got.YAML, "tool: x_fk_echo")
}

// reconcileEntry is one resource of core_reconcile_status's answer.
type reconcileEntry struct {
	Kind      string `json:"kind"`
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	Hash      string `json:"hash,omitempty"`
	types.Reconcile
}

func TestCoreReconcileStatusShowsOneResourceOrAll(t *testing.T) {
	h := newHarness(t, nil)
	declareAll(h)
	cs := h.connect(PathDirect, "2025-06-18", nil)
	one := text(t, call(t, cs, "core_reconcile_status", map[string]any{"name": "remote"}))
	assert.JSONEq(t, `{"kind":"MCPServer","namespace":"default","name":"remote","hash":"`+h.index.Hash(remoteKey)+`","state":"Error",
		"lastError":"connect: 401","retryCount":3,"nextRetry":"2026-11-24T12:01:00Z","correlationID":"c-2"}`, one)
	all := decode[struct {
		Resources []reconcileEntry
		Total     int
	}](t, call(t, cs, "core_reconcile_status", nil))
	require.Equal(t, 3, all.Total)
	assert.Equal(t, "Synced", all.Resources[0].State)
	assert.Equal(t, "Pending", all.Resources[2].State, "the workflow, not reconciled yet")
	wf := decode[struct{ Total int }](t, call(t, cs, "core_reconcile_status", map[string]any{"kind": "wf"}))
	assert.Equal(t, 1, wf.Total)
	res := call(t, cs, "core_reconcile_status", map[string]any{"kind": "pods"})
	assert.True(t, res.IsError)
	assert.Contains(t, text(t, res), `unknown kind "pods"`)
}

func TestCoreEventsListsMustersEventsNewestFirst(t *testing.T) {
	h := newHarness(t, nil)
	declareAll(h)
	h.bus.Start()
	h.bus.Publish(events.IndexSynchronized{Meta: events.NewMetaAt(at, "c-0"), Source: events.SourceFilesystem})
	h.bus.Publish(events.ResourceChanged{Meta: events.NewMetaAt(at, "c-1"), Key: fakeKey, Operation: events.OperationCreate, Source: events.SourceFilesystem})
	h.bus.Publish(events.ResourceSynced{Meta: events.NewMetaAt(at, "c-1"), Key: fakeKey, Duration: 12 * time.Millisecond}) // observed running
	h.observe(remoteKey, v1alpha1.MCPServerStatus{State: v1alpha1.MCPServerStateFailed, LastError: "token=abc rejected"})
	h.bus.Publish(events.ResourceFailed{Meta: events.NewMetaAt(at.Add(time.Second), "c-2"), Key: remoteKey, Error: "token=abc rejected", NextRetry: at.Add(time.Minute)})
	cs := h.connect(PathDirect, musterProtocol, nil)
	assert.JSONEq(t, `[
		{"timestamp":"2026-11-24 12:00:01","resource_type":"MCPServer","resource_name":"remote","namespace":"default","reason":"MCPServerFailed","message":"MCPServer remote operation failed: token=[redacted] rejected","type":"Warning"},
		{"timestamp":"2026-11-24 12:00:00","resource_type":"MCPServer","resource_name":"fake","namespace":"default","reason":"MCPServerToolsDiscovered","message":"MCPServer fake tools discovered and registered successfully","type":"Normal"},
		{"timestamp":"2026-11-24 12:00:00","resource_type":"MCPServer","resource_name":"fake","namespace":"default","reason":"MCPServerStarted","message":"MCPServer fake service started successfully","type":"Normal"},
		{"timestamp":"2026-11-24 12:00:00","resource_type":"MCPServer","resource_name":"fake","namespace":"default","reason":"MCPServerCreated","message":"MCPServer fake successfully created in namespace default","type":"Normal"}]`,
		text(t, call(t, cs, "core_events", nil)))
	assert.Contains(t, text(t, call(t, cs, "core_events", map[string]any{"eventType": "Warning"})), `"remote"`)
	assert.NotContains(t, text(t, call(t, cs, "core_events", map[string]any{"eventType": "Warning"})), `"fake"`)
	assert.Equal(t, "[]", text(t, call(t, cs, "core_events", map[string]any{"resourceType": "workflow"})))
	assert.Equal(t, "[]", text(t, call(t, cs, "core_events", map[string]any{"resourceType": "DoesNotExist"})), "muster: an unknown type matches nothing")
	assert.Contains(t, text(t, call(t, cs, "core_events", map[string]any{"resourceType": "mcpserver", "resourceName": "fake"})), `"MCPServerCreated"`)
	assert.NotContains(t, text(t, call(t, cs, "core_events", map[string]any{"limit": 1})), `"fake"`, "the newest")
	res := call(t, cs, "core_events", map[string]any{"since": "yesterday"})
	assert.True(t, res.IsError)
	assert.Contains(t, text(t, res), "Invalid 'since' time format")
}

func TestCoreEventsFollowWritesNotificationsToTheSessionStream(t *testing.T) {
	h := newHarness(t, nil)
	declareAll(h)
	h.bus.Start()

	// A raw session, as muster's CLI would hold one: initialize, open the
	// standalone stream, call core_events with follow.
	code, hdr, _ := h.send(http.MethodPost, PathMCP, initialize, nil)
	require.Equal(t, http.StatusOK, code)
	session := hdr.Get(sessionHeader)
	withSession := map[string]string{sessionHeader: session}
	code, _, _ = h.send(http.MethodPost, PathMCP, `{"jsonrpc":"2.0","method":"notifications/initialized"}`, withSession)
	require.Equal(t, http.StatusAccepted, code)
	req, err := http.NewRequest(http.MethodGet, h.url+PathMCP, nil)
	require.NoError(t, err)
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set(sessionHeader, session)
	resp, err := h.http.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	stream := make(chan string, 16)
	go readEvents(resp.Body, stream)

	code, _, body := h.send(http.MethodPost, PathMCP, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"call_tool","arguments":{"name":"core_events","arguments":{"follow":true,"resourceName":"fake"}}}}`, withSession)
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, body, `\"isError\":false`)

	h.observe(remoteKey, v1alpha1.MCPServerStatus{State: v1alpha1.MCPServerStateConnected})
	h.observe(fakeKey, v1alpha1.MCPServerStatus{State: v1alpha1.MCPServerStateStarting})
	h.bus.Publish(events.ResourceSynced{Meta: events.NewMetaAt(at, "c-9"), Key: remoteKey, Duration: time.Millisecond}) // filtered out
	h.bus.Publish(events.ResourceSynced{Meta: events.NewMetaAt(at, "c-9"), Key: fakeKey, Duration: time.Millisecond})
	for {
		data := waitFor(t, stream, "the followed event")
		if !strings.Contains(data, "notifications/muster/event") {
			continue
		}
		assert.JSONEq(t, `{"jsonrpc":"2.0","method":"notifications/muster/event","params":{"timestamp":"2026-11-24 12:00:00","resource_type":"MCPServer",
			"resource_name":"fake","namespace":"default","reason":"MCPServerStarting","message":"MCPServer fake service is starting up","type":"Normal"}}`, data)
		break
	}
}

func TestCoreEventsFollowNeedsASession(t *testing.T) {
	h := newHarness(t, nil)
	res, err := h.backend.CallTool(context.Background(), "core_events", map[string]any{"follow": true}, nil)
	require.NoError(t, err)
	assert.True(t, res.IsError)
	assert.Equal(t, "core_events: follow: it needs an MCP session with a stream (/mcp, /mcp/direct or /sse); this call has none", text(t, res))
	var _ = mcp.CallToolResult{}
}

func TestCoreReconcileStatusWithNoNameShowsTheControlsOverview(t *testing.T) {
	resync := at.Add(-time.Hour)
	overview := controls.Overview{Mode: "kubernetes", Role: "follower", Leader: "musterd-1",
		Kinds:        []controls.KindOverview{{Kind: "MCPServer", Enabled: true, Resources: 2}, {Kind: "Workflow", Note: controls.NoteDisabled, Resources: 1}},
		EnabledKinds: []string{"MCPServer"}, QueueDepth: 4, Resources: map[string]int{"Synced": 1, "Error": 1, "Pending": 1},
		Servers: map[string]int{"Running": 1, "Unknown": 1}, LastFullResync: &resync, Tools: 7}
	h := newHarness(t, func(o *setup) { o.core.Overview = func() controls.Overview { return overview } })
	declareAll(h)
	cs := h.connect(PathDirect, "2025-06-18", nil)
	all := decode[struct {
		Overview  controls.Overview
		Resources []reconcileEntry
		Total     int
	}](t, call(t, cs, "core_reconcile_status", nil))
	assert.Equal(t, overview, all.Overview, "the controls' overview, as it is")
	assert.Equal(t, 3, all.Total, "and every resource's state, as before")
	one := text(t, call(t, cs, "core_reconcile_status", map[string]any{"name": "remote"}))
	assert.NotContains(t, one, "overview", "one resource asked for: its state alone")
}
