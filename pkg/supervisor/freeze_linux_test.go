package supervisor_test

import (
	"errors"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// cldStopped is CLD_STOPPED of <linux/signal.h>: waitid's si_code for a
// child that stopped (x/sys/unix has no name for it).
const cldStopped = 5

// freeze stops the process pid, a child of the test's own (the supervisor
// runs in the test), with SIGSTOP, and returns once the kernel reports it
// stopped, every thread of it.
//
// kill alone returns earlier: SIGSTOP wakes one thread of a multithreaded
// process, which stops the others only once it is scheduled. Meanwhile,
// on a loaded machine, another thread (mcp-fake's Go runtime has several)
// may still read a request and answer it: a ping made right after the kill
// was answered, about once in 40 runs of
// TestCallDoneRefreshesLastConnectedOrPingsAtOnce under load, and the
// server was never failed.
func freeze(t *testing.T, pid int) {
	t.Helper()
	require.NoError(t, syscall.Kill(pid, syscall.SIGSTOP))
	// WNOWAIT leaves the child as it is, to be waited for by the
	// supervisor: WEXITED (a process that died instead) is reaped there.
	var info unix.Siginfo
	for {
		err := unix.Waitid(unix.P_PID, pid, &info, unix.WSTOPPED|unix.WEXITED|unix.WNOWAIT, nil)
		if !errors.Is(err, syscall.EINTR) {
			require.NoError(t, err, "waiting for pid %d to stop", pid)
			break
		}
	}
	require.Equal(t, int32(cldStopped), info.Code, "pid %d stopped (si_code CLD_STOPPED), did not exit", pid)
}
