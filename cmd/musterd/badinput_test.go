package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/musterd/musterd/internal/badinput"
	"github.com/musterd/musterd/pkg/apis/muster/v1alpha1"
)

// peakRSS is the most memory the process has held, from /proc (VmHWM).
func peakRSS(t *testing.T, pid int) int64 {
	t.Helper()
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	require.NoError(t, err)
	for line := range strings.Lines(string(data)) {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kib, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			require.NoError(t, err)
			return kib << 10
		}
	}
	t.Fatal("no VmHWM in /proc/<pid>/status")
	return 0
}

// maxBadInputRSSGrowth bounds how much the daemon's peak memory may grow
// while it reads the whole bad corpus, under the race detector, whose
// shadow memory makes the growth swing (54 to 98 MiB seen on a loaded
// 2-core machine): far below what expanding the alias bomb would take
// (gigabytes). The finer bound, that no single bad file, the 100 MB one
// included, makes the watcher allocate more than 64 MiB, is
// TestEveryBadInputIsAnErrorNamingItsFileWithinBoundedMemory's, counted
// in allocations rather than resident pages.
const maxBadInputRSSGrowth = 256 << 20

// Every file of the bad corpus, and the hostile files made at test time (a
// 100 MB file, a symlink loop, a file with no read permission), dropped
// into the config dir of a daemon that runs a server: each shows its error
// on its resource, naming the file and the cause; the daemon's peak memory
// stays bounded; it never crashes; and the running server is neither
// stopped nor restarted, not even by a file claiming its identity.
func TestE2EBadInputIsAnErrorOnItsResourceAndStopsNothing(t *testing.T) {
	want := badinput.Expectations(t)
	corpus := badinput.Dir(t)
	e := startFS(t)
	marker := newMarker()
	e.write(t, "mcpservers/steady.yaml", mcpServerYAML("steady", stdioSpec("-tools", marker)...))
	e.waitServer(t, "steady", "is Running", running("x_steady_"+marker))
	steady := theServerProc(t, marker)
	rssBefore := peakRSS(t, e.cmd.Process.Pid)
	began := time.Now()

	mcps := filepath.Join(e.config, "mcpservers")
	var written []string
	for file := range want {
		data, err := os.ReadFile(filepath.Join(corpus, file))
		require.NoError(t, err)
		if file == "duplicate-identity.yaml" {
			data = []byte(strings.Replace(string(data), "IDENTITY", "steady", 1))
		}
		require.NoError(t, os.WriteFile(filepath.Join(mcps, file), data, 0o644))
		written = append(written, file)
	}
	for file, part := range badinput.WriteGenerated(t, mcps) {
		want[file] = part
		written = append(written, file)
	}
	if os.Geteuid() == 0 {
		t.Log("running as root, who reads a file whatever its mode: no unreadable-file case here (pkg/watchers/fs injects EACCES instead)")
	} else {
		locked := filepath.Join(mcps, "locked.yaml")
		require.NoError(t, os.WriteFile(locked, []byte(mcpServerYAML("locked", stdioSpec()...)), 0o644))
		require.NoError(t, os.Chmod(locked, 0))
		want["locked.yaml"] = badinput.UnreadableError
		written = append(written, "locked.yaml")
	}

	for file, part := range want {
		name := strings.TrimSuffix(file, ".yaml")
		if file == "duplicate-identity.yaml" {
			name = "steady"
		}
		s := e.waitServer(t, name, "shows the error of "+file, func(s serverObject) bool {
			return s.Reconcile.State == "Error" && strings.Contains(s.Reconcile.LastError, "mcpservers/"+file) &&
				strings.Contains(s.Reconcile.LastError, part)
		})
		t.Logf("%s: %s", file, s.Reconcile.LastError)
	}
	t.Logf("every bad input showed its error within %v", time.Since(began).Round(time.Millisecond))
	rssAfter := peakRSS(t, e.cmd.Process.Pid)
	t.Logf("musterd's peak RSS: %d MiB before the bad inputs, %d MiB after", rssBefore>>20, rssAfter>>20)
	assert.Less(t, rssAfter-rssBefore, int64(maxBadInputRSSGrowth), "the bad inputs grew musterd's peak memory by %d MiB", (rssAfter-rssBefore)>>20)

	s, _ := e.server(t, "steady")
	assert.Equal(t, v1alpha1.MCPServerStateRunning, s.Status.State, "the last good server keeps running")
	assert.True(t, steady.alive(), "a bad input stopped the running server")
	assert.Equal(t, []proc{steady}, serverProcs(marker), "a bad input restarted the running server")
	assert.Equal(t, []proc{steady}, descendants(e.cmd.Process.Pid), "a bad input started a process")

	for _, file := range written {
		require.NoError(t, os.Remove(filepath.Join(mcps, file)))
	}
	e.waitServer(t, "steady", "is Synced again", running("x_steady_"+marker))
	eventually(t, "only steady is left", func() bool { return len(e.list(t, "mcpservers")) == 1 })
	assert.Equal(t, []proc{steady}, serverProcs(marker), "removing the bad files restarted the server")
	select {
	case err := <-e.exited:
		t.Fatalf("musterd exited: %v\n%s", err, e.stderr)
	default:
	}
}
