//go:build unix

package proctest

import (
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestKillGroupEndsTheGroupAndExistsSeesIt starts sh as the leader of a
// group of its own with a child in the background, and checks each helper
// against it: Kill ends the leader alone, GroupExists still sees the child,
// KillGroup ends it.
func TestKillGroupEndsTheGroupAndExistsSeesIt(t *testing.T) {
	cmd := exec.Command("sh", "-c", "sleep 60 & echo $!; wait")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start sh: %v", err)
	}
	leader := cmd.Process.Pid
	t.Cleanup(func() { _ = syscall.Kill(-leader, syscall.SIGKILL) })
	buf := make([]byte, 32)
	n, err := out.Read(buf)
	if err != nil {
		t.Fatalf("reading the child's pid: %v", err)
	}
	child, err := strconv.Atoi(strings.TrimSpace(string(buf[:n])))
	if err != nil {
		t.Fatalf("child's pid %q: %v", buf[:n], err)
	}

	if !Exists(leader) || !Exists(child) || !GroupExists(leader) {
		t.Fatalf("Exists(leader)=%v Exists(child)=%v GroupExists=%v, want all true", Exists(leader), Exists(child), GroupExists(leader))
	}
	if err := Kill(leader); err != nil {
		t.Fatalf("Kill: %v", err)
	}
	_ = cmd.Wait()
	if Exists(leader) {
		t.Fatal("Exists: the reaped leader still exists")
	}
	if !GroupExists(leader) {
		t.Fatal("GroupExists: the child left in the group was not seen")
	}
	if err := KillGroup(leader); err != nil {
		t.Fatalf("KillGroup: %v", err)
	}
	// The child, orphaned, is reaped by init: poll for it to go.
	deadline := time.Now().Add(10 * time.Second)
	for GroupExists(leader) {
		if time.Now().After(deadline) {
			t.Fatal("GroupExists: the group outlived KillGroup by 10s")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if Exists(child) {
		t.Fatal("Exists: the killed child still exists")
	}
}
