// Command musterd is the reconciliation daemon and its command-line client.
//
//	musterd run [flags]                  run the daemon
//	musterd get [KIND [NAME]]            list resources, or show one
//	musterd describe KIND/NAME           show a resource in detail
//	musterd reconcile KIND/NAME          reconcile a resource now
//	musterd events [-f]                  print the daemon's events
//	musterd wait KIND/NAME --for synced  wait for a resource's state
//	musterd start|stop|restart NAME      control an MCP server
//	musterd enable|disable KIND          turn a kind's reconciliation on or off
//	musterd resync [KIND]                reconcile everything now
//	musterd status                       the daemon's overview
//	musterd replay FILE [--diff GOLDEN]  replay a recorded event trace
//	musterd version                      print the version
//
// The daemon wires the pipeline (pkg/pipeline) in filesystem mode and
// serves its HTTP API (pkg/api) on loopback by default; the client
// commands talk to that API.
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
  musterd run [flags]                  run the daemon
  musterd get [KIND [NAME]]            list resources, or show one (-o table|json|yaml)
  musterd describe KIND/NAME           show a resource in detail
  musterd reconcile KIND/NAME          reconcile a resource now
  musterd events [-f]                  print the daemon's events as they happen
  musterd wait KIND/NAME --for synced  wait until a resource is synced (error, failed, deleted)
  musterd start|stop|restart NAME      start, stop (until started) or restart an MCP server
  musterd enable|disable KIND          turn a kind's reconciliation on or off
  musterd resync [KIND]                reconcile everything (or a kind) now, pruning orphans
  musterd status                       the daemon's overview
  musterd replay FILE [--diff GOLDEN]  replay a trace recorded with run --record, offline
  musterd version                      print the version

Kinds: mcpservers (mcpserver, mcps) and workflows (workflow, wf); name a
resource as KIND/NAME or KIND NAME, with -n NAMESPACE outside "default".
The client commands reach the daemon at --server (default
http://127.0.0.1:8090, or $MUSTERD_SERVER) with --token (or $MUSTERD_TOKEN).

Run "musterd COMMAND -h" for a command's flags.
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
	case "get", "describe", "reconcile", "events", "wait", "start", "stop", "restart", "enable", "disable", "resync", "status":
		return runClient(args[0], args[1:], stdout, stderr)
	case "replay":
		return runReplay(args[1:], stdout, stderr)
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
