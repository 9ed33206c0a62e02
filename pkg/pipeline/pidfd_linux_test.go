package pipeline_test

import (
	"syscall"

	"github.com/stretchr/testify/assert"
	"golang.org/x/sys/unix"
)

// track pins the identity of a server's process with a pidfd, taken as
// the supervisor reports it running. A PID alone can name another process
// by the time it is checked: on this machine (pid_max 32768, several test
// suites at once) the numbers wrap every few minutes.
func (d *daemon) track(pid int) {
	if pid == 0 {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if _, ok := d.procs[pid]; ok {
		return
	}
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		fd = -1 // ESRCH: reaped already
	}
	d.procs[pid] = fd
}

// closePidfds closes the pidfds track opened. A cleanup per pidfd,
// registered as each server started, ran before the shutdown that a
// benchmark leaves to its cleanup, which then signalled closed
// descriptors and reported every server as outliving the pipeline.
func (d *daemon) closePidfds() {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, fd := range d.procs {
		if fd >= 0 {
			_ = unix.Close(fd)
		}
	}
}

// gone reports whether the server process that had pid is reaped. Signal 0
// through its pidfd reaches a zombie too, and never another process that
// got the number since.
func (d *daemon) gone(pid int) bool {
	d.mu.Lock()
	fd, ok := d.procs[pid]
	d.mu.Unlock()
	if !assert.True(d.t, ok, "pid %d was never reported by the supervisor", pid) {
		return false
	}
	return fd < 0 || unix.PidfdSendSignal(fd, 0, nil, 0) == unix.ESRCH
}

// groupGone reports whether no process is left in the process group the
// server process pid led. While any member lives, the kernel hands pid to
// no new process; so if pid now names a process other than the server,
// the server's group has ended and the one of that number is another's.
func (d *daemon) groupGone(pid int) bool {
	if syscall.Kill(-pid, 0) != nil {
		return true
	}
	return d.gone(pid) && syscall.Kill(pid, 0) == nil
}
