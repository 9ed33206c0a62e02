// Package proctest finds the processes a test started, whatever the code
// under test reports of them: for the tests that prove no process is left
// behind (the supervisor's, the MCPServer reconciler's). Exists,
// GroupExists, Kill and KillGroup (signal_unix.go, signal_windows.go) check
// and end processes the same way on every system the tests build for, so
// that a test file needs no syscall of its own.
//
// Place: test support only; it imports nothing of musterd's.
package proctest

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// With returns the pids of the live processes one of whose arguments is
// arg, a marker a test gives the processes it starts. Linux only: it
// reads /proc, where a zombie's cmdline is empty, so an exited process not
// yet reaped is not found (a pid the test knows can be checked with
// kill(pid, 0) for that).
func With(t testing.TB, arg string) []int {
	t.Helper()
	dirs, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatalf("proctest: %v", err)
	}
	var pids []int
	for _, d := range dirs {
		pid, err := strconv.Atoi(d.Name())
		if err != nil {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", d.Name(), "cmdline"))
		if err != nil {
			continue // gone meanwhile
		}
		if slices.Contains(strings.Split(string(cmdline), "\x00"), arg) {
			pids = append(pids, pid)
		}
	}
	return pids
}
