// Package mcpfake builds cmd/mcp-fake, the small MCP server of musterd's
// tests, once per test binary.
//
// Place: test support, used from TestMain by every package whose tests run
// real MCP servers as child processes.
package mcpfake

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// Main builds cmd/mcp-fake into a temporary directory, sets *bin to its
// path, runs the tests, removes the directory and exits with the tests'
// code. Call it as the whole of TestMain:
//
//	func TestMain(m *testing.M) { mcpfake.Main(m, &fakeBin) }
func Main(m *testing.M, bin *string) {
	os.Exit(run(m, bin))
}

func run(m *testing.M, bin *string) int {
	dir, err := os.MkdirTemp("", "mcp-fake-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	*bin = filepath.Join(dir, "mcp-fake")
	if out, err := exec.Command("go", "build", "-o", *bin, "github.com/musterd/musterd/cmd/mcp-fake").CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "building mcp-fake: %v\n%s", err, out)
		return 1
	}
	return m.Run()
}
