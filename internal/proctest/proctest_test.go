package proctest

import (
	"os/exec"
	"testing"
)

func TestWithFindsAChildByItsArgumentAndNotOthers(t *testing.T) {
	marker := "proctest-marker-" + t.Name()
	// sh keeps its arguments while sleep runs: the marker is its $0.
	cmd := exec.Command("sh", "-c", "sleep 30; :", marker)
	if err := cmd.Start(); err != nil {
		t.Fatalf("start sh: %v", err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	pids := With(t, marker)
	if len(pids) != 1 || pids[0] != cmd.Process.Pid {
		t.Fatalf("With(%q) = %v, want [%d]", marker, pids, cmd.Process.Pid)
	}
	if got := With(t, marker+"-other"); len(got) != 0 {
		t.Fatalf("With of an unused marker = %v, want none", got)
	}
}
