package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	iofs "io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/musterd/musterd/pkg/api/types"
	"github.com/musterd/musterd/pkg/apis/muster/v1alpha1"
	"github.com/musterd/musterd/pkg/coretools"
)

// lineStream collects the lines of a streaming response (an event stream)
// as they come.
type lineStream struct {
	mu    sync.Mutex
	lines []string
	ended chan struct{}
}

func readLines(resp *http.Response) *lineStream {
	s := &lineStream{ended: make(chan struct{})}
	go func() {
		defer close(s.ended)
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 64<<10), 4<<20)
		for sc.Scan() {
			s.mu.Lock()
			s.lines = append(s.lines, sc.Text())
			s.mu.Unlock()
		}
	}()
	return s
}

func (s *lineStream) text() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return strings.Join(s.lines, "\n")
}

// The secrets a run through the MCP endpoint handles — an MCP server's env
// values (one of which the server prints on its stderr), a remote server's
// headers, a workflow's password argument passed on to tools on both
// servers — appear in nothing musterd writes or serves, with its log at
// debug level: its log, every file of its state dir (status files,
// executions, service overrides), its event stream /api/v1/events, and
// what core_mcpserver_get and core_workflow_execution_get answer.
func TestE2ESecretsOfServersAndWorkflowsStayOutOfLogsStateAndMCP(t *testing.T) {
	secret := func(what string) string { return what + "-" + newMarker() }
	var (
		envToken  = secret("envtoken")  // env API_TOKEN, printed on the server's stderr
		envPlain  = secret("envplain")  // env under a name that says nothing
		hdrBearer = secret("hdrbearer") // Authorization: Bearer …
		hdrCustom = secret("hdrcustom") // a header under a name that says nothing
		password  = secret("password")  // the workflow's argument
	)
	secrets := []string{envToken, envPlain, hdrBearer, hdrCustom, password}

	e := startFS(t, "-log-level", "debug")
	// The event stream, open before anything is declared: the API answers
	// its headers once its bus subscription exists.
	streamCtx, endStream := context.WithCancel(context.Background())
	defer endStream()
	req, err := http.NewRequestWithContext(streamCtx, http.MethodGet, "http://"+e.addr+"/api/v1/events", nil)
	require.NoError(t, err)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	events := readLines(resp)

	url := startRemoteServer(t, "json")
	marker := newMarker()
	e.write(t, "mcpservers/envy.yaml", mcpServerYAML("envy", append(stdioSpec("-tools", "json,fail,"+marker, "-stderr-env", "API_TOKEN"),
		"env: "+yamlValue(map[string]string{"API_TOKEN": envToken, "REGION": envPlain}))...))
	e.write(t, "mcpservers/far.yaml", mcpServerYAML("far", "type: streamable-http", "autoStart: true", "url: "+yamlValue(url), "timeout: 10",
		"headers: "+yamlValue(map[string]string{"Authorization": "Bearer " + hdrBearer, "X-Tenant": hdrCustom})))
	e.write(t, "workflows/login.yaml", `apiVersion: muster.giantswarm.io/v1alpha1
kind: Workflow
metadata:
  name: login
spec:
  args:
    user: {type: string, default: me}
    password: {type: string, required: true}
  steps:
    - {id: near, tool: x_envy_json, args: {user: "{{ .input.user }}", password: "{{ .input.password }}"}}
    - {id: far, tool: x_far_json, args: {user: "{{ .input.user }}", password: "{{ .input.password }}"}}
---
apiVersion: muster.giantswarm.io/v1alpha1
kind: Workflow
metadata:
  name: refused
spec:
  args:
    password: {type: string, required: true}
  steps:
    - {id: try, tool: x_envy_fail, args: {password: "{{ .input.password }}"}}
`)
	e.waitServer(t, "envy", "is Running", running("x_envy_fail", "x_envy_json", "x_envy_"+marker))
	e.waitServer(t, "far", "is Connected", func(s serverObject) bool { return s.Status.State == v1alpha1.MCPServerStateConnected })

	// Tools called natively and as muster's CLI calls them, with the
	// secret as an argument; the workflow run both ways.
	direct := e.directClient(t, nil)
	muster := e.mcpClient(t, "/mcp", "2024-11-05", nil)
	waitTool(t, direct, "workflow_login", true)
	waitTool(t, direct, "workflow_refused", true)
	for _, tool := range []string{"x_envy_json", "x_far_json"} {
		text, isError := callTool(t, direct, tool, map[string]any{"password": password})
		require.False(t, isError, text)
		// The caller's own secret comes back to it, from the server: it
		// went through musterd both ways.
		assert.Contains(t, text, password, "the server echoes its arguments")
		text, isError = musterCall(t, muster, tool, map[string]any{"password": password})
		require.False(t, isError, text)
	}
	_, isError := callTool(t, direct, "workflow_login", map[string]any{"password": password})
	require.False(t, isError)
	text, isError := musterCall(t, muster, "workflow_login", map[string]any{"password": password, "user": "you"})
	require.False(t, isError, text)
	// A run that fails on a step whose error repeats the password.
	text, isError = musterCall(t, muster, "workflow_refused", map[string]any{"password": password})
	require.True(t, isError, text)
	text, isError = callTool(t, direct, coretools.ToolExecutionList, nil)
	require.False(t, isError, text)
	var list types.ExecutionList
	require.NoError(t, json.Unmarshal([]byte(text), &list), text)
	var executions []string
	for _, ex := range list.Executions {
		executions = append(executions, ex.ExecutionID)
	}
	require.Len(t, executions, 3, text)
	served := map[string]string{"core_workflow_execution_list": text}

	// An operator's stop and start: the overrides file is written.
	text, isError = musterCall(t, muster, "core_service_stop", map[string]any{"name": "envy", "reason": "maintenance"})
	require.False(t, isError, text)
	stopped, err := os.ReadFile(filepath.Join(e.state, overridesFile))
	require.NoError(t, err)
	assert.Contains(t, string(stopped), "maintenance", "the stop is kept in the overrides file")
	served["state "+overridesFile+" while envy is stopped"] = string(stopped)
	text, isError = musterCall(t, muster, "core_service_start", map[string]any{"name": "envy"})
	require.False(t, isError, text)
	e.waitServer(t, "envy", "is Running again", running("x_envy_fail", "x_envy_json", "x_envy_"+marker))

	// What MCP serves about them.
	for _, name := range []string{"envy", "far"} {
		text, isError := musterCall(t, muster, "core_mcpserver_get", map[string]any{"name": name})
		require.False(t, isError, text)
		served["core_mcpserver_get "+name] = text
	}
	for _, id := range executions {
		text, isError := callTool(t, direct, coretools.ToolExecutionGet, map[string]any{"execution_id": id})
		require.False(t, isError, text)
		served["core_workflow_execution_get "+id] = text
		text, isError = musterCall(t, muster, coretools.ToolExecutionGet, map[string]any{"execution_id": id})
		require.False(t, isError, text)
		served["core_workflow_execution_get (muster) "+id] = text
	}

	// The event stream has seen every run's end.
	eventually(t, "/api/v1/events shows the runs' ends", func() bool {
		text := events.text()
		for _, id := range executions {
			if !strings.Contains(text, id) {
				return false
			}
		}
		return strings.Contains(text, "WorkflowExecutionFinished")
	})
	endStream()
	select {
	case <-events.ended:
	case <-time.After(e2eDeadline):
		t.Fatal("the event stream did not end with its context")
	}
	served["/api/v1/events"] = events.text()

	// Everything musterd wrote: its log and every file of its state dir.
	outputs := map[string]string{"stderr log": e.stderr.String()}
	for what, text := range served {
		outputs[what] = text
	}
	var files []string
	require.NoError(t, filepath.WalkDir(e.state, func(path string, d iofs.DirEntry, err error) error {
		require.NoError(t, err)
		if d.IsDir() {
			return nil
		}
		data, err := os.ReadFile(path)
		require.NoError(t, err)
		rel, _ := filepath.Rel(e.state, path)
		files = append(files, rel)
		outputs["state "+rel] = string(data)
		return nil
	}))
	t.Logf("state files: %v", files)

	// Not vacuous: the outputs do talk about these servers and runs, and
	// the secrets did reach where they were meant to.
	assert.Contains(t, outputs["stderr log"], "level=DEBUG")
	assert.Contains(t, outputs["state "+filepath.Join("status", "mcpservers", "default", "envy.yaml")], "envy")
	executionFiles := 0
	for _, f := range files {
		for _, id := range executions {
			if strings.Contains(f, id) || strings.Contains(outputs["state "+f], id) {
				executionFiles++
				break
			}
		}
	}
	assert.NotZero(t, executionFiles, "the executions are kept under the state dir: %v", files)
	assert.Contains(t, served["core_mcpserver_get envy"], "API_TOKEN")
	assert.Contains(t, served["core_mcpserver_get far"], "X-Tenant")
	refusals := 0
	for _, id := range executions {
		assert.Contains(t, served["core_workflow_execution_get "+id], `"password":"[redacted]"`)
		if strings.Contains(served["core_workflow_execution_get "+id], "failed as asked") {
			refusals++
		}
	}
	assert.Equal(t, 1, refusals, "the refused run's record keeps its step's error")
	assert.Contains(t, served["/api/v1/events"], "envy")
	environ, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", theServerProc(t, marker).pid))
	require.NoError(t, err)
	assert.Contains(t, string(environ), "API_TOKEN="+envToken, "the env value reached the server")

	for where, text := range outputs {
		for _, s := range secrets {
			if i := strings.Index(text, s); i >= 0 {
				line := text[strings.LastIndexByte(text[:i], '\n')+1:]
				line, _, _ = strings.Cut(line, "\n")
				t.Errorf("secret %s appears in %s: %s", s[:strings.IndexByte(s, '-')], where, line)
			}
		}
	}
}
