// Package catalogue is the tool catalogue: the tools that the running MCP
// servers offer, under the names musterd exposes them by.
//
// Place in the pipeline: beside the index, on the runtime side. The runtime
// bridge (package watchers/runtime) writes it from what the supervisor
// reports; the Workflow reconciler reads it to check the tools a workflow
// names. It imports only events and knows nothing of the bus.
//
// Guarantees:
//
//   - Exposed names follow muster's rule:
//     {global prefix}_{toolPrefix or server name}_{tool}, the global prefix
//     being Options.Prefix ("x" by default), so toolPrefix "ec" and tool
//     "echo" give "x_ec_echo".
//   - Set and Remove report exactly the exposed names whose answer changed:
//     a name that appeared or disappeared, or whose Lookup now names
//     another server. Nothing else, so a caller can react to them alone.
//   - Two servers may expose one name (the same toolPrefix); the name is
//     offered while either offers it, and Lookup answers the server whose key
//     sorts first, so the answer never depends on the order of calls.
//   - It also knows which servers are starting (SetStarting) and the name
//     prefix their tools will have, so that StartingFor tells a tool that
//     may yet come from one that is missing.
//   - Safe for concurrent use; every slice returned is the caller's own.
package catalogue
