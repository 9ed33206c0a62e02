// Command musterd is the reconciliation daemon.
//
//	musterd run [flags]   run the daemon
//	musterd version       print the version
//
// It wires the pipeline (pkg/pipeline) and serves, on loopback by default,
// Prometheus metrics, health and readiness, and the reconcile status of
// every resource.
package main

import (
	"fmt"
	"io"
	"os"
)

// version is set at build time with -ldflags "-X main.version=…".
var version = "dev"

const usage = `musterd keeps MCP servers and workflows true to their definitions.

Usage:
  musterd run [flags]   run the daemon
  musterd version       print the version

Run "musterd run -h" for the daemon's flags.
`

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run is main without the process: it returns the exit code.
func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	switch args[0] {
	case "run":
		return runDaemon(args[1:], stderr)
	case "version", "--version":
		fmt.Fprintln(stdout, "musterd", version)
		return 0
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return 0
	}
	fmt.Fprintf(stderr, "musterd: unknown command %q\n\n%s", args[0], usage)
	return 2
}
