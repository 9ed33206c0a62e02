package files_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"

	"github.com/musterd/musterd/pkg/events"
	"github.com/musterd/musterd/pkg/statusync"
	"github.com/musterd/musterd/pkg/statusync/files"
)

var key = events.NewKey("MCPServer", "", "git")

func TestWritesTheStatusFileAtomicallyUnderStatus(t *testing.T) {
	dir := t.TempDir()
	w, err := files.New(files.Options{StateDir: dir, ResourceStatus: func(k events.Key) (any, bool) {
		return map[string]any{"state": "Running", "restartCount": 2}, k == key
	}})
	require.NoError(t, err)
	at := time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)
	// A stray temporary file left by a crash is cleaned up by the first
	// write into its directory.
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "status/mcpservers/default"), 0o700))
	stray := filepath.Join(dir, "status/mcpservers/default/.git.yaml.tmp-123")
	require.NoError(t, os.WriteFile(stray, []byte("half"), 0o600))
	otherStray := filepath.Join(dir, "status/mcpservers/default/.fs.yaml.tmp-456")
	require.NoError(t, os.WriteFile(otherStray, []byte("half"), 0o600))

	require.NoError(t, w.WriteStatus(context.Background(), statusync.Status{
		Key: key, State: statusync.StateError, LastReconcileTime: at, LastError: "exit 1", RetryCount: 1,
		NextRetry: at.Add(2 * time.Second), CorrelationID: "c1",
	}))

	path := filepath.Join(dir, "status/mcpservers/default/git.yaml")
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, `apiVersion: muster.giantswarm.io/v1alpha1
kind: MCPServer
metadata:
    name: git
    namespace: default
status:
    restartCount: 2
    state: Running
reconcile:
    state: Error
    lastReconcileTime: "2026-11-21T10:00:00Z"
    lastError: exit 1
    retryCount: 1
    nextRetry: "2026-11-21T10:00:02Z"
    correlationID: c1
`, string(data))
	var back files.Document
	require.NoError(t, yaml.Unmarshal(data, &back))
	info, err := os.Stat(path)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), info.Mode().Perm(), "a status file is its owner's only")
	assert.NoFileExists(t, stray)
	assert.NoFileExists(t, otherStray, "every stray of the directory")
	entries, err := os.ReadDir(filepath.Dir(path))
	require.NoError(t, err)
	assert.Len(t, entries, 1, "only the status file remains")
}

func TestWithoutResourceStatusTheFileCarriesTheReconcileState(t *testing.T) {
	dir := t.TempDir()
	w, err := files.New(files.Options{StateDir: dir})
	require.NoError(t, err)
	wf := events.NewKey("Workflow", "team", "deploy")
	require.NoError(t, w.WriteStatus(context.Background(), statusync.Status{Key: wf, State: statusync.StateSynced}))
	data, err := os.ReadFile(filepath.Join(dir, "status/workflows/team/deploy.yaml"))
	require.NoError(t, err)
	assert.NotContains(t, string(data), "status:")
	assert.Contains(t, string(data), "state: Synced")
	assert.NotContains(t, string(data), "reconciliationDisabled")
	require.NoError(t, w.WriteStatus(context.Background(), statusync.Status{Key: wf, State: statusync.StatePending, ReconcileDisabled: true}))
	data, err = os.ReadFile(filepath.Join(dir, "status/workflows/team/deploy.yaml"))
	require.NoError(t, err)
	assert.Contains(t, string(data), "reconciliationDisabled: true")
	// The directories the writer made are its owner's only, even under a
	// permissive umask.
	for _, d := range []string{"status", "status/workflows", "status/workflows/team"} {
		info, err := os.Stat(filepath.Join(dir, d))
		require.NoError(t, err)
		assert.Equal(t, os.FileMode(0o700), info.Mode().Perm(), d)
	}
}

func TestDeleteRemovesTheFileAndAMissingOneIsFine(t *testing.T) {
	dir := t.TempDir()
	w, err := files.New(files.Options{StateDir: dir})
	require.NoError(t, err)
	require.NoError(t, w.WriteStatus(context.Background(), statusync.Status{Key: key, State: statusync.StateSynced}))
	require.NoError(t, w.DeleteStatus(context.Background(), key))
	assert.NoFileExists(t, filepath.Join(dir, files.Path(key)))
	assert.NoError(t, w.DeleteStatus(context.Background(), key))
}

func TestErrorsNameTheFileRelativeToTheStateDirAndCarryACategory(t *testing.T) {
	dir := t.TempDir()
	// status/ is a file, so no directory can be made below it.
	require.NoError(t, os.WriteFile(filepath.Join(dir, "status"), nil, 0o644))
	w, err := files.New(files.Options{StateDir: dir})
	require.NoError(t, err)
	err = w.WriteStatus(context.Background(), statusync.Status{Key: key, State: statusync.StateSynced})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "status file status/mcpservers/default/git.yaml")
	assert.NotContains(t, err.Error(), dir, "the absolute state dir leaks into the message")
	assert.Equal(t, "other", statusync.CategoryOf(err))

	if os.Geteuid() != 0 { // root writes through permissions
		ro := t.TempDir()
		require.NoError(t, os.Chmod(ro, 0o500))
		w, err := files.New(files.Options{StateDir: ro})
		require.NoError(t, err)
		err = w.WriteStatus(context.Background(), statusync.Status{Key: key, State: statusync.StateSynced})
		assert.Equal(t, "permission_denied", statusync.CategoryOf(err))
	}
	_, err = files.New(files.Options{})
	assert.Error(t, err)
}

func TestPathAndPlural(t *testing.T) {
	assert.Equal(t, filepath.Join("status", "mcpservers", "default", "git.yaml"), files.Path(events.Key{Kind: "MCPServer", Name: "git"}))
	assert.Equal(t, "workflows", files.Plural("Workflow"))
}

// Directories an earlier version created 0755 are restricted to their
// owner at the first write into them; the state dir itself, which the
// operator names and may share, is left alone, and a restriction of the
// owner's own (0500) is not loosened.
func TestAnExistingOpenStatusDirIsRestrictedAtTheFirstWrite(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.Chmod(dir, 0o755))
	for _, d := range []string{"status", "status/mcpservers", "status/mcpservers/default", "status/workflows/team"} {
		require.NoError(t, os.MkdirAll(filepath.Join(dir, d), 0o755))
		require.NoError(t, os.Chmod(filepath.Join(dir, d), 0o755))
	}
	require.NoError(t, os.Chmod(filepath.Join(dir, "status/workflows"), 0o550))
	w, err := files.New(files.Options{StateDir: dir})
	require.NoError(t, err)
	require.NoError(t, w.WriteStatus(context.Background(), statusync.Status{Key: key, State: statusync.StateSynced}))
	want := map[string]os.FileMode{
		".": 0o755, "status": 0o700, "status/mcpservers": 0o700, "status/mcpservers/default": 0o700,
		"status/workflows": 0o550, "status/workflows/team": 0o755,
	}
	perms := func() map[string]os.FileMode {
		got := map[string]os.FileMode{}
		for d := range want {
			info, err := os.Stat(filepath.Join(dir, d))
			require.NoError(t, err)
			got[d] = info.Mode().Perm()
		}
		return got
	}
	assert.Equal(t, want, perms(), "only the directories written into, and only group and other bits")

	require.NoError(t, w.WriteStatus(context.Background(), statusync.Status{Key: events.NewKey("Workflow", "team", "deploy"), State: statusync.StateSynced}))
	want["status/workflows"] = 0o500
	want["status/workflows/team"] = 0o700
	assert.Equal(t, want, perms(), "the owner's own 0550 loses its group bits, and is not made writable")
}
