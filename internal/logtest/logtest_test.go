package logtest

import (
	"os"
	"path/filepath"
	"testing"
)

func TestTailKeepsTheLastLines(t *testing.T) {
	path := filepath.Join(t.TempDir(), "log")
	if err := os.WriteFile(path, []byte("one\ntwo\nthree\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for n, want := range map[int]string{2: "two\nthree", 3: "one\ntwo\nthree", 10: "one\ntwo\nthree"} {
		if got := Tail(path, n); got != want {
			t.Errorf("Tail(%d) = %q, want %q", n, got, want)
		}
	}
	if got := Tail(filepath.Join(t.TempDir(), "absent"), 2); got != "" {
		t.Errorf("Tail of a missing file = %q, want none", got)
	}
}
