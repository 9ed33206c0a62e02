// Package mcpfake builds cmd/mcp-fake, the small MCP server of musterd's
// tests, once per test binary.
//
// Place: test support, used from TestMain by every package whose tests run
// real MCP servers as child processes.
package mcpfake

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
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

// ServeHTTP runs bin (mcp-fake) serving streamable HTTP and SSE on a free
// loopback port, as the test's child until the test ends, and returns its
// streamable-http URL (http://ADDR/mcp; SSE is at http://ADDR/sse) and the
// process, for tests that make the server go away.
func ServeHTTP(t testing.TB, bin string, args ...string) (url string, cmd *exec.Cmd) {
	t.Helper()
	cmd = exec.Command(bin, append([]string{"-http", "127.0.0.1:0"}, args...)...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		t.Fatalf("mcp-fake -http: %v", err)
	}
	url, ok := strings.CutPrefix(strings.TrimSpace(line), "listening on ")
	if !ok {
		t.Fatalf("mcp-fake -http said %q, not its address", line)
	}
	return url, cmd
}
