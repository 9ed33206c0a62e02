// Package modroot is test support: where musterd's module is checked out,
// so that a test helper finds what the Makefile put under it (.cache/,
// bin/) from whichever package's directory the test runs in.
package modroot

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
)

// Dir returns the directory of musterd's go.mod, searched upwards from the
// working directory (a test's is its package's directory). Another
// module's go.mod on the way (hack/dex has one) is passed over.
func Dir() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		data, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil && bytes.HasPrefix(data, []byte("module github.com/musterd/musterd\n")) {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod of module github.com/musterd/musterd above the working directory")
		}
		dir = parent
	}
}
