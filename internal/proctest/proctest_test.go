package proctest

import (
	"os/exec"
	"testing"
	"time"
)

func TestWithFindsAChildByItsArgumentAndNotOthers(t *testing.T) {
	marker := "proctest-marker-" + t.Name()
	// The marker is sh's $0. sh waits in a builtin read on a pipe nobody
	// writes, so it never forks: a forked child carries its parent's
	// arguments until it execs, and under load With caught sh's child
	// running sleep in that instant, a second process with the marker.
	cmd := exec.Command("sh", "-c", "read line", marker)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatalf("stdin: %v", err)
	}
	defer stdin.Close()
	if err := cmd.Start(); err != nil {
		t.Fatalf("start sh: %v", err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	// Start returns once the child is exec'ing, which is before the kernel
	// has laid out its new arguments: for that moment its cmdline reads
	// empty. So the test waits for the marker to show, as every user of
	// With does.
	var pids []int
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if pids = With(t, marker); len(pids) > 0 {
			break
		}
	}
	if len(pids) != 1 || pids[0] != cmd.Process.Pid {
		t.Fatalf("With(%q) = %v, want [%d]", marker, pids, cmd.Process.Pid)
	}
	if got := With(t, marker+"-other"); len(got) != 0 {
		t.Fatalf("With of an unused marker = %v, want none", got)
	}
}
