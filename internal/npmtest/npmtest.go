package npmtest

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// RequireEnv, set to 1, turns a missing npm package (or node) from a skip
// into a failure. `make test` sets it where node is installed.
const RequireEnv = "MUSTERD_REQUIRE_NPM"

// Package is an npm package the tests run, and where it is installed.
type Package struct {
	Name   string // its npm name
	Bin    string // its executable under node_modules/.bin
	Target string // the Makefile target that installs it
}

// The packages the Makefile pins.
var (
	ServerEverythingPackage = Package{Name: "@modelcontextprotocol/server-everything", Bin: "mcp-server-everything", Target: "npm-servers"}
	InspectorPackage        = Package{Name: "@modelcontextprotocol/inspector", Bin: "mcp-inspector", Target: "npm-clients"}
)

// ServerEverything returns the absolute path of server-everything's
// executable (it serves stdio with the argument "stdio"), or skips t (fails
// it under MUSTERD_REQUIRE_NPM=1).
func ServerEverything(t testing.TB) string {
	t.Helper()
	return Require(t, ServerEverythingPackage)
}

// Inspector returns the absolute path of the MCP Inspector's CLI, or skips
// t (fails it under MUSTERD_REQUIRE_NPM=1).
func Inspector(t testing.TB) string {
	t.Helper()
	return Require(t, InspectorPackage)
}

// Require returns the absolute path of p's executable, or skips t (fails
// it under MUSTERD_REQUIRE_NPM=1) saying what is missing.
func Require(t testing.TB, p Package) string {
	t.Helper()
	bin, err := Lookup(t, p)
	if err != nil {
		t.Skip(err.Error())
	}
	return bin
}

// Lookup returns the absolute path of p's executable, or an error saying
// what is missing, for a test that runs without it (and skips only what
// needs it). Under MUSTERD_REQUIRE_NPM=1 a missing package fails t.
func Lookup(t testing.TB, p Package) (string, error) {
	t.Helper()
	bin, err := find(p)
	if err != nil && os.Getenv(RequireEnv) == "1" {
		t.Fatal(err.Error() + "; " + RequireEnv + "=1 makes this a failure")
	}
	return bin, err
}

// find is Lookup's search, without a verdict on t.
func find(p Package) (string, error) {
	if _, err := exec.LookPath("node"); err != nil {
		return "", fmt.Errorf("npmtest: node is not installed: no test against the npm package %s", p.Name)
	}
	root, err := moduleRoot()
	if err != nil {
		return "", err
	}
	bin := filepath.Join(root, ".cache", "npm", "node_modules", ".bin", p.Bin)
	if _, err := os.Stat(bin); err != nil {
		return "", fmt.Errorf("npmtest: %s is not installed at %s: run `make %s`", p.Name, bin, p.Target)
	}
	return bin, nil
}

// moduleRoot is the nearest directory at or above the working directory
// (a test's is its package's) that holds a go.mod.
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("npmtest: %w", err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("npmtest: no go.mod above the working directory")
		}
		dir = parent
	}
}
