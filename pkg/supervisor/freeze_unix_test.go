//go:build unix && !linux

package supervisor_test

import (
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// freeze stops the process pid with SIGSTOP and returns once ps reports it
// stopped (see freeze_linux_test.go for why kill alone is not enough).
// Without waitid's report of a stop here, it asks ps until it says so.
func freeze(t *testing.T, pid int) {
	t.Helper()
	require.NoError(t, syscall.Kill(pid, syscall.SIGSTOP))
	require.Eventually(t, func() bool {
		out, err := exec.Command("ps", "-o", "stat=", "-p", strconv.Itoa(pid)).Output()
		return err == nil && strings.HasPrefix(strings.TrimSpace(string(out)), "T")
	}, deadline, 5*time.Millisecond, "pid %d stopped", pid)
}
