package coretools

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/musterd/musterd/pkg/apis/muster/v1alpha1"
	"github.com/musterd/musterd/pkg/bus"
	"github.com/musterd/musterd/pkg/controls"
	"github.com/musterd/musterd/pkg/declare"
	"github.com/musterd/musterd/pkg/events"
	"github.com/musterd/musterd/pkg/resources"
	"github.com/musterd/musterd/pkg/services"
	"github.com/musterd/musterd/pkg/statusync"
	"github.com/musterd/musterd/pkg/watchers/fs"
)

// statuses is a status store the test sets.
type statuses struct {
	mu sync.Mutex
	m  map[events.Key]statusync.Status
}

func (s *statuses) Get(k events.Key) (statusync.Status, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	st, ok := s.m[k.Canonical()]
	return st, ok
}

func (s *statuses) List() []statusync.Status     { return nil }
func (s *statuses) SetKindDisabled(string, bool) {}

func (s *statuses) set(st statusync.Status) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.m[st.Key.Canonical()] = st
}

type coordinator struct{}

func (coordinator) KindEnabled(string) bool           { return true }
func (coordinator) SetKindEnabled(string, bool) error { return nil }

// harness is the provider over a real config dir, watched by the real
// filesystem watcher into a real index: a change is in force once the
// watcher read it.
type harness struct {
	p        *Provider
	dir      string
	index    *resources.Index
	statuses *statuses
	store    declare.Store
}

func newHarness(t *testing.T) *harness {
	t.Helper()
	h := &harness{dir: t.TempDir(), index: resources.New(), statuses: &statuses{m: map[events.Key]statusync.Status{}}}
	b := bus.New(bus.Options{})
	b.Start()
	t.Cleanup(b.Close)
	w, err := fs.New(b, fs.Options{ConfigDir: h.dir, Index: h.index})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = w.Start(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	store, err := declare.NewFiles(declare.FilesOptions{ConfigDir: h.dir, Declared: func(k events.Key) ([]string, bool) {
		e, ok := h.index.Get(k)
		return e.Files, ok
	}})
	require.NoError(t, err)
	h.store = store
	ov, err := services.New(nil)
	require.NoError(t, err)
	c, err := controls.New(controls.Options{Bus: b, Index: h.index, Overrides: ov, Coordinator: coordinator{},
		Kinds:        []string{v1alpha1.KindMCPServer, v1alpha1.KindWorkflow},
		List:         func(context.Context, string) ([]events.Key, error) { return nil, nil },
		Statuses:     h.statuses,
		ServerStatus: func(events.Key) (v1alpha1.MCPServerStatus, bool) { return v1alpha1.MCPServerStatus{}, false },
		WaitTimeout:  time.Millisecond})
	require.NoError(t, err)
	h.p, err = New(Options{Store: store, Index: h.index, Statuses: h.statuses, Controls: c, InForceTimeout: time.Minute, WaitTimeout: time.Minute})
	require.NoError(t, err)
	return h
}

func (h *harness) call(t *testing.T, name string, args map[string]any) (string, bool) {
	t.Helper()
	res, err := h.p.CallTool(context.Background(), name, args, nil)
	require.NoError(t, err)
	require.Len(t, res.Content, 1)
	return res.Content[0].(*mcp.TextContent).Text, res.IsError
}

func gitArgs() map[string]any {
	return map[string]any{"name": "git", "type": "stdio", "command": "mcp-git", "autoStart": true,
		"args": []any{"--repo", "."}, "timeout": float64(30), "env": map[string]any{"GIT_TOKEN": "s3cr3t-value"}}
}

func TestToolsAreMustersWithTheirSchemas(t *testing.T) {
	h := newHarness(t)
	var names []string
	write := map[string]bool{}
	for _, n := range []string{"core_mcpserver_validate", "core_mcpserver_create", "core_mcpserver_update", "core_mcpserver_delete",
		"core_workflow_validate", "core_workflow_create", "core_workflow_update", "core_workflow_delete",
		"core_service_start", "core_service_stop", "core_service_restart"} {
		write[n] = true
	}
	for _, tool := range h.p.Tools() {
		names = append(names, tool.Name)
		schema := tool.InputSchema.(map[string]any)
		assert.Equal(t, "object", schema["type"])
		if write[tool.Name] {
			assert.Contains(t, schema["required"], "name", tool.Name)
		}
	}
	assert.Equal(t, []string{"core_auth_login", "core_auth_logout", "core_config_get", "core_events", "core_mcpserver_create", "core_mcpserver_delete", "core_mcpserver_get",
		"core_mcpserver_list", "core_mcpserver_update", "core_mcpserver_validate", "core_reconcile_status", "core_service_list",
		"core_service_restart", "core_service_start", "core_service_status", "core_service_stop", "core_workflow_available",
		"core_workflow_create", "core_workflow_delete", "core_workflow_get", "core_workflow_list", "core_workflow_update",
		"core_workflow_validate"}, names, "every core tool, read and write, sorted")
	_, err := h.p.CallTool(context.Background(), "core_nothing", nil, nil)
	assert.EqualError(t, err, "unknown tool: core_nothing")
}

// Without a Store and Controls only the tools that change nothing are
// offered, and the login tools, which change only the caller's own logins.
func TestWithoutAStoreOnlyTheReadToolsAreOffered(t *testing.T) {
	p, err := New(Options{Index: resources.New(), Statuses: &statuses{}})
	require.NoError(t, err)
	var names []string
	for _, tool := range p.Tools() {
		names = append(names, tool.Name)
	}
	assert.Equal(t, []string{"core_auth_login", "core_auth_logout", "core_config_get", "core_events", "core_mcpserver_get", "core_mcpserver_list", "core_reconcile_status",
		"core_service_list", "core_service_status", "core_workflow_available", "core_workflow_get", "core_workflow_list"}, names)
	_, err = New(Options{Index: resources.New()})
	assert.EqualError(t, err, "coretools: Index and Statuses are required")
}

func TestMCPServerLifecycleInMustersTexts(t *testing.T) {
	h := newHarness(t)
	msg, isErr := h.call(t, "core_mcpserver_validate", gitArgs())
	assert.False(t, isErr)
	assert.Equal(t, "Validation successful for mcpserver git", msg)
	_, err := os.Stat(filepath.Join(h.dir, "mcpservers"))
	assert.True(t, os.IsNotExist(err), "validate writes nothing")

	msg, isErr = h.call(t, "core_mcpserver_create", gitArgs())
	assert.False(t, isErr, msg)
	assert.Equal(t, "MCP server 'git' created successfully", msg)
	e, ok := h.index.Get(events.NewKey(v1alpha1.KindMCPServer, "", "git"))
	require.True(t, ok, "the answer comes once the definition is in force")
	assert.Equal(t, "mcp-git", e.Object.(*v1alpha1.MCPServer).Spec.Command)
	data, err := os.ReadFile(filepath.Join(h.dir, "mcpservers", "git.yaml"))
	require.NoError(t, err)
	assert.Contains(t, string(data), "GIT_TOKEN: s3cr3t-value", "written as asked")

	msg, isErr = h.call(t, "core_mcpserver_update", map[string]any{"name": "git", "command": "mcp-git2"})
	assert.False(t, isErr, msg)
	assert.Equal(t, "MCP server 'git' updated successfully", msg)
	e, _ = h.index.Get(events.NewKey(v1alpha1.KindMCPServer, "", "git"))
	assert.Equal(t, "mcp-git2", e.Object.(*v1alpha1.MCPServer).Spec.Command)
	assert.Equal(t, []string{"--repo", "."}, e.Object.(*v1alpha1.MCPServer).Spec.Args, "fields not named are kept")

	msg, isErr = h.call(t, "core_mcpserver_delete", map[string]any{"name": "git"})
	assert.False(t, isErr, msg)
	assert.Equal(t, "MCP server 'git' deleted successfully", msg)
	_, ok = h.index.Get(events.NewKey(v1alpha1.KindMCPServer, "", "git"))
	assert.False(t, ok)
}

// The Done-when item "every bad input is a test": each answered with an
// isError text naming the cause, nothing written, no secret echoed.
func TestBadInputs(t *testing.T) {
	h := newHarness(t)
	_, isErr := h.call(t, "core_mcpserver_create", gitArgs())
	require.False(t, isErr)
	_, isErr = h.call(t, "core_workflow_create", map[string]any{"name": "flow", "steps": []any{map[string]any{"id": "a", "tool": "x_git_status"}}})
	require.False(t, isErr)
	before := snapshot(t, h.dir)

	with := func(m map[string]any, kv ...any) map[string]any {
		out := map[string]any{}
		for k, v := range m {
			out[k] = v
		}
		for i := 0; i < len(kv); i += 2 {
			out[kv[i].(string)] = kv[i+1]
		}
		return out
	}
	other := with(gitArgs(), "name", "other")
	for _, tc := range []struct {
		name, tool string
		args       map[string]any
		want       string
	}{
		{"unknown field", "core_mcpserver_create", with(other, "comand", "x"), `Invalid MCP server definition: spec.comand: unknown field (did you mean "command"?)`},
		{"missing required field", "core_mcpserver_create", map[string]any{"name": "other", "type": "stdio"}, "Invalid MCP server definition: spec.command:"},
		{"missing name", "core_mcpserver_create", map[string]any{"type": "stdio"}, "name is required"},
		{"bad type", "core_mcpserver_create", with(other, "timeout", "soon"), "Invalid MCP server definition: spec.timeout:"},
		{"bad type of name", "core_mcpserver_create", with(other, "name", 7.0), "name must be a non-empty string, not a number"},
		{"bad type of wait", "core_mcpserver_create", with(other, "wait", "yes"), "wait must be a boolean, not a string"},
		{"bad name", "core_mcpserver_create", with(other, "name", "../etc"), "Invalid MCP server definition: metadata.name:"},
		{"validate: bad type", "core_mcpserver_validate", with(other, "autoStart", "yes"), "Validation failed: spec.autoStart:"},
		{"name exists", "core_mcpserver_create", gitArgs(), "MCP server 'git' already exists"},
		{"update of a name that does not exist", "core_mcpserver_update", map[string]any{"name": "nope", "command": "x"}, "Failed to update MCP server: MCP server nope not found"},
		{"delete of a name that does not exist", "core_mcpserver_delete", map[string]any{"name": "nope"}, "Failed to delete MCP server: MCP server nope not found"},
		{"update: bad type", "core_mcpserver_update", map[string]any{"name": "git", "args": "--verbose"}, "Invalid MCP server definition: spec.args:"},
		{"stale resourceVersion", "core_mcpserver_update", map[string]any{"name": "git", "command": "x", "resourceVersion": "sha256:0000"}, "Failed to update MCP server: conflict: MCP server git (mcpservers/git.yaml) was changed by someone else"},
		{"workflow: missing steps", "core_workflow_create", map[string]any{"name": "w2", "description": "d"}, "Failed to create workflow: steps argument is required"},
		{"workflow: unknown step field", "core_workflow_validate", map[string]any{"name": "w2", "steps": []any{map[string]any{"id": "a", "tool": "t", "retries": 3.0}}}, "Validation failed: spec.steps[0].retries: unknown field"},
		{"workflow exists", "core_workflow_create", map[string]any{"name": "flow", "steps": []any{map[string]any{"id": "a", "tool": "t"}}}, "Failed to create workflow: workflow 'flow' already exists"},
		{"workflow update of a name that does not exist", "core_workflow_update", map[string]any{"name": "nope", "steps": []any{}}, "Failed to update workflow: workflow nope not found"},
		{"workflow delete of a name that does not exist", "core_workflow_delete", map[string]any{"name": "nope"}, "Failed to delete workflow: workflow nope not found"},
		{"service that is not declared", "core_service_stop", map[string]any{"name": "nope"}, "Failed to stop service: service nope not found"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			msg, isErr := h.call(t, tc.tool, tc.args)
			assert.True(t, isErr, msg)
			assert.True(t, strings.HasPrefix(msg, tc.want), "%q\nwant prefix %q", msg, tc.want)
			assert.NotContains(t, msg, "s3cr3t")
			assert.Equal(t, before, snapshot(t, h.dir), "nothing is written")
		})
	}
}

func snapshot(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	require.NoError(t, filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(path)
		out[path] = string(data)
		return err
	}))
	return out
}

func TestSecretsInErrorsAreScrubbed(t *testing.T) {
	h := newHarness(t)
	args := gitArgs()
	args["headers"] = map[string]any{"Authorization": "Bearer s3cr3t-header"}
	args["timeout"] = "s3cr3t-in-the-wrong-place"
	args["env"] = map[string]any{"GIT_TOKEN": "s3cr3t-in-the-wrong-place"}
	for _, tool := range []string{"core_mcpserver_create", "core_mcpserver_validate"} {
		msg, isErr := h.call(t, tool, args)
		assert.True(t, isErr, tool)
		assert.Contains(t, msg, "spec.timeout", tool)
		assert.NotContains(t, msg, "s3cr3t", tool)
	}
}

// A conflicting edit between a read (the version a caller got) and its
// update is answered as a conflict, and the edit survives.
func TestAConflictingEditSurvivesAnUpdate(t *testing.T) {
	h := newHarness(t)
	_, isErr := h.call(t, "core_workflow_create", map[string]any{"name": "flow", "steps": []any{map[string]any{"id": "a", "tool": "x_git_status"}}})
	require.False(t, isErr)
	read, err := h.store.Get(t.Context(), events.NewKey(v1alpha1.KindWorkflow, "", "flow"))
	require.NoError(t, err)
	path := filepath.Join(h.dir, "workflows", "flow.yaml")
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	edit := strings.Replace(string(data), "x_git_status", "x_git_log # by hand", 1)
	require.NoError(t, os.WriteFile(path, []byte(edit), 0o600))

	msg, isErr := h.call(t, "core_workflow_update", map[string]any{"name": "flow", "resourceVersion": read.Version,
		"steps": []any{map[string]any{"id": "a", "tool": "x_git_diff"}}})
	assert.True(t, isErr)
	assert.Contains(t, msg, "Failed to update workflow: conflict:")
	got, _ := os.ReadFile(path)
	assert.Equal(t, edit, string(got), "the edit survives")
}

// With wait: true the answer comes once the resource is reconciled, and
// names the state.
func TestWaitAnswersOnceReconciled(t *testing.T) {
	h := newHarness(t)
	key := events.NewKey(v1alpha1.KindWorkflow, "", "flow")
	// The reconciles below poll until the call has written; they end with
	// the test should a call return without writing.
	ctx := t.Context()
	poll := func() bool {
		select {
		case <-ctx.Done():
			return false
		case <-time.After(time.Millisecond):
			return true
		}
	}
	go func() {
		// The reconcile: once the definition is in force, it is Synced.
		for {
			if hash := h.index.Hash(key); hash != "" {
				h.statuses.set(statusync.Status{Key: key, State: statusync.StateSynced, ObservedHash: hash})
				return
			}
			if !poll() {
				return
			}
		}
	}()
	msg, isErr := h.call(t, "core_workflow_create", map[string]any{"name": "flow", "wait": true,
		"steps": []any{map[string]any{"id": "a", "tool": "x_git_status", "allow_failure": true}}})
	assert.False(t, isErr, msg)
	assert.Equal(t, "Workflow created successfully (Synced)", msg)
	e, _ := h.index.Get(key)
	assert.True(t, e.Object.(*v1alpha1.Workflow).Spec.Steps[0].AllowFailure, "snake_case spellings are accepted")

	// A failure from before the update is not the update's.
	h.statuses.set(statusync.Status{Key: key, State: statusync.StateFailed, LastError: "an old failure", LastReconcileTime: time.Now().Add(-time.Hour)})
	hash := h.index.Hash(key)
	go func() {
		for h.index.Hash(key) == hash {
			if !poll() {
				return
			}
		}
		h.statuses.set(statusync.Status{Key: key, State: statusync.StateFailed, LastError: "tool x_git_status is missing", LastReconcileTime: time.Now()})
	}()
	msg, isErr = h.call(t, "core_workflow_update", map[string]any{"name": "flow", "wait": true, "description": "d",
		"steps": []any{map[string]any{"id": "a", "tool": "x_git_status"}}})
	assert.True(t, isErr)
	assert.Equal(t, "Workflow 'flow' updated successfully, but its reconcile failed: tool x_git_status is missing", msg)
}

// hungStore is a Store whose every call waits for its context: an API
// server that never answers.
type hungStore struct{ declare.Store }

func (hungStore) Mode() string { return declare.ModeKubernetes }
func (hungStore) Get(ctx context.Context, _ events.Key) (declare.Definition, error) {
	<-ctx.Done()
	return declare.Definition{}, ctx.Err()
}
func (hungStore) Create(ctx context.Context, _ events.Key, _ map[string]any, _ ...declare.Meta) (declare.Definition, error) {
	<-ctx.Done()
	return declare.Definition{}, ctx.Err()
}
func (hungStore) Update(ctx context.Context, _ events.Key, _ map[string]any, _ string) (declare.Definition, error) {
	<-ctx.Done()
	return declare.Definition{}, ctx.Err()
}
func (hungStore) Delete(ctx context.Context, _ events.Key, _ string) error {
	<-ctx.Done()
	return ctx.Err()
}

// Every write through a store that never answers fails after
// StoreTimeout, naming the store, the operation and the timeout, though
// the MCP call's context has no deadline.
func TestAStoreThatNeverAnswersFailsTheToolAfterStoreTimeout(t *testing.T) {
	h := newHarness(t)
	p, err := New(Options{Store: hungStore{}, Index: h.index, Statuses: h.statuses, Controls: h.p.opts.Controls,
		StoreTimeout: 50 * time.Millisecond})
	require.NoError(t, err)
	wf := map[string]any{"name": "w", "steps": []any{map[string]any{"id": "a", "tool": "x_t"}}}
	for _, c := range []struct {
		tool string
		args map[string]any
		want string
	}{
		{"core_mcpserver_create", gitArgs(), "Failed to create MCP server: create MCPServer/default/git: the kubernetes store did not answer within 50ms"},
		{"core_mcpserver_update", gitArgs(), "Failed to update MCP server: update MCPServer/default/git: the kubernetes store did not answer within 50ms"},
		{"core_mcpserver_delete", map[string]any{"name": "git"}, "Failed to delete MCP server: get MCPServer/default/git: the kubernetes store did not answer within 50ms"},
		{"core_workflow_create", wf, "Failed to create workflow: create Workflow/default/w: the kubernetes store did not answer within 50ms"},
		{"core_workflow_update", wf, "Failed to update workflow: update Workflow/default/w: the kubernetes store did not answer within 50ms"},
	} {
		done := make(chan *mcp.CallToolResult, 1)
		go func() {
			res, _ := p.CallTool(context.Background(), c.tool, c.args, nil)
			done <- res
		}()
		select {
		case res := <-done:
			require.True(t, res.IsError, c.tool)
			assert.Equal(t, c.want, res.Content[0].(*mcp.TextContent).Text)
		case <-time.After(20 * time.Second):
			t.Fatalf("%s: the call outlived the store's timeout", c.tool)
		}
	}
}
