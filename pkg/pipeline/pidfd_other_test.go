//go:build !linux

package pipeline_test

import (
	"github.com/stretchr/testify/assert"

	"github.com/musterd/musterd/internal/proctest"
)

// Without pidfds, which are Linux's, a server's process is known by its PID
// alone: by the time it is checked the number may name another process.
// These systems only build the tests here and run them seldom, so that is
// accepted rather than a second mechanism kept.

// track records the PID of a server's process (no pidfd: the value is -1).
func (d *daemon) track(pid int) {
	if pid == 0 {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if _, ok := d.procs[pid]; !ok {
		d.procs[pid] = -1
	}
}

// closePidfds has nothing to close.
func (d *daemon) closePidfds() {}

// gone reports whether no process of that PID is left.
func (d *daemon) gone(pid int) bool {
	d.mu.Lock()
	_, ok := d.procs[pid]
	d.mu.Unlock()
	if !assert.True(d.t, ok, "pid %d was never reported by the supervisor", pid) {
		return false
	}
	return !proctest.Exists(pid)
}

// groupGone reports whether nothing is left of the group the server
// process pid led.
func (d *daemon) groupGone(pid int) bool { return !proctest.GroupExists(pid) }
