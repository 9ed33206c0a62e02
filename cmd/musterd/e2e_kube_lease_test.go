package main

import (
	"os/exec"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// A leader whose Lease is taken over (as after a network partition, when
// another holder renewed it meanwhile) stops its leader-only stages and
// every server it started, logs the loss and exits with code 1, for the
// kubelet to restart it as a follower; the other replica takes over once
// the thief's Lease expires and runs the servers.
func TestE2EKubeALeaderThatLosesTheLeaseStopsItsServersAndExits(t *testing.T) {
	const lease = 4 * time.Second
	k := startKube(t)
	args := []string{"-leader-elect", "-leader-election-namespace", "default", "-leader-election-id", "musterd-e2e",
		"-leader-election-lease-duration", lease.String(), "-leader-election-renew-deadline", "3s",
		"-leader-election-retry-period", "500ms"}
	replicas := []*runningDaemon{k.musterd(t, args...), k.musterd(t, args...)}
	names := []string{"one", "two"}
	markers := []string{newMarker(), newMarker()}
	for i, name := range names {
		k.createServer(t, name, markers[i])
	}
	var leader *runningDaemon
	eventually(t, "one replica, the leader, runs every server; the other none", func() bool {
		var ok bool
		leader, ok = leaderOf(replicas, markers...)
		return ok
	})
	follower := replicas[0]
	if follower == leader {
		follower = replicas[1]
	}
	for i, name := range names {
		k.waitStatus(t, name, "runs", runningGen(name, markers[i], 1))
	}
	var old []proc
	for _, p := range descendants(leader.cmd.Process.Pid) {
		if slices.ContainsFunc(markers, func(m string) bool { return slices.Contains(p.args, m) }) {
			old = append(old, p)
		}
	}
	require.Len(t, old, len(names), "the leader's own children run the servers")

	// Another holder takes the Lease over: the leader's renewals fail
	// until its renew deadline.
	stolen := time.Now()
	eventually(t, "the Lease is taken over", func() bool {
		var l coordinationv1.Lease
		if err := k.cp.Client.Get(t.Context(), client.ObjectKey{Namespace: "default", Name: "musterd-e2e"}, &l); err != nil {
			return false
		}
		stolen = time.Now()
		l.Spec.HolderIdentity = ptr.To("thief")
		l.Spec.LeaseDurationSeconds = ptr.To(int32(lease / time.Second))
		l.Spec.RenewTime = &metav1.MicroTime{Time: stolen}
		return k.cp.Client.Update(t.Context(), &l) == nil
	})

	var err error
	select {
	case err = <-leader.exited:
	case <-time.After(e2eDeadline):
		t.Fatalf("the leader did not exit after losing the Lease\n%s", leader.stderr)
	}
	// Checked at once: a server left behind would be orphaned, and then
	// could die of its closed stdin only later.
	for _, p := range old {
		assert.False(t, p.alive(), "server %v, started by the old leader, outlived it", p.args)
	}
	var exit *exec.ExitError
	require.ErrorAs(t, err, &exit, "%s", leader.stderr)
	assert.Equal(t, 1, exit.ExitCode())
	assert.Contains(t, leader.stderr.String(), `msg="lost the lease; the leader-only stages must stop"`)
	assert.Contains(t, leader.stderr.String(), "leader election: lost the lease")

	// The follower takes over once the thief's Lease has expired, and
	// reconciles every resource once.
	eventually(t, "the other replica runs every server", func() bool {
		_, ok := leaderOf([]*runningDaemon{follower}, markers...)
		return ok
	})
	t.Logf("the other replica ran every server %s after the Lease was stolen (the thief's Lease: %s)",
		time.Since(stolen).Round(time.Millisecond), lease)
	// Twice each: its pass asks for the start, and the start's outcome is
	// reconciled when it comes (no reconcile waits for a start).
	eventually(t, "the new leader's pass has reconciled every resource", func() bool {
		return mcpReconciles(t, follower) >= 2*len(names)
	})
	assert.Equal(t, 2*len(names), mcpReconciles(t, follower), "the new leader reconciled every resource once, and its start's outcome once")
	assert.Contains(t, follower.stderr.String(), `msg="became the leader"`)
	for i, name := range names {
		k.waitStatus(t, name, "runs", runningGen(name, markers[i], 1))
	}
}
