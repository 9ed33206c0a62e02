package replaytest

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/musterd/musterd/pkg/eventtrace"
	"github.com/musterd/musterd/pkg/eventtrace/replay"
)

// update is the -update flag of tests that use Golden.
var update = flag.Bool("update", false, "rewrite the golden files replaytest.Golden compares with")

// Golden compares got, written in the trace format, with the file at path,
// byte for byte. On a difference it fails t with a line diff of the two;
// when the test runs with -update, it rewrites the file instead.
func Golden(t testing.TB, got *eventtrace.Trace, path string) {
	t.Helper()
	data, err := replay.Encode(got)
	if err != nil {
		t.Fatalf("replaytest: %v", err)
		return
	}
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatalf("replaytest: %v", err)
			return
		}
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatalf("replaytest: %v", err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("replaytest: golden file: %v (run the test with -update to write it)", err)
		return
	}
	if !bytes.Equal(want, data) {
		t.Errorf("replaytest: the replay differs from golden file %s (run the test with -update to accept it):\n%s", path, replay.Diff(want, data))
	}
}
