package main

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// SIGINT (Ctrl-C in a terminal) stops musterd as gracefully as SIGTERM:
// exit 0 and no server left behind.
func TestE2ESIGINTStopsGracefullyLeavingNoChild(t *testing.T) {
	e := startFS(t)
	marker := newMarker()
	e.write(t, "mcpservers/a.yaml", mcpServerYAML("a", stdioSpec("-tools", "a,"+marker)...))
	e.waitServer(t, "a", "is Running", running("x_a_a", "x_a_"+marker))
	children := descendants(e.cmd.Process.Pid)
	require.Len(t, children, 1)

	e.stopWith(t, syscall.SIGINT, e2eDeadline)
	assert.False(t, children[0].alive(), "pid %d %q outlived musterd", children[0].pid, children[0].args)
	assert.Empty(t, serverProcs(marker))
	assert.Contains(t, e.stderr.String(), `msg="musterd stopped"`)
}

// Without -config-dir, musterd reads ~/.config/muster (the user's config
// dir, $XDG_CONFIG_HOME/muster here), as muster does.
func TestE2EWithoutConfigDirTheUsersMusterConfigIsRead(t *testing.T) {
	home := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", home)
	dir := filepath.Join(home, "muster", "workflows")
	require.NoError(t, os.MkdirAll(dir, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "deploy.yaml"), []byte(workflowYAML("deploy", "x_a_one")), 0o644))

	e := &fsEnv{runningDaemon: startDaemon(t, "-state-dir", t.TempDir())}
	e.waitWorkflow(t, "deploy", "Synced", "x_a_one")
}
