package modroot

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestDirHoldsMusterdsGoMod(t *testing.T) {
	root, err := Dir()
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(data), "module github.com/musterd/musterd\n") {
		t.Fatalf("%s/go.mod is another module's", root)
	}
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(root, "internal", "modroot"); wd != want {
		t.Fatalf("a test runs in %s, and Dir found %s", wd, root)
	}
}

// From a directory holding another module (hack/dex), the search goes on
// up to musterd's.
func TestDirPassesOverAnotherModule(t *testing.T) {
	root, err := Dir()
	if err != nil {
		t.Fatal(err)
	}
	t.Chdir(filepath.Join(root, "hack", "dex"))
	got, err := Dir()
	if err != nil {
		t.Fatal(err)
	}
	if got != root {
		t.Fatalf("Dir() from hack/dex = %s, want %s", got, root)
	}
}
