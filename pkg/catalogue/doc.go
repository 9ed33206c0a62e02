// Package catalogue is the tool catalogue: the tools that the running MCP
// servers offer, under the names musterd exposes them by, with their
// definitions.
//
// Place in the pipeline: beside the index, on the runtime side. The runtime
// bridge (package watchers/supervised) writes it from what the supervisor
// reports; the Workflow reconciler reads it to check the tools a workflow
// names; the router (package router) reads it to list and route the tools
// the MCP endpoint serves, and subscribes to its changes. It imports only
// events and knows nothing of the bus.
//
// Guarantees:
//
//   - Exposed names follow muster's rule:
//     {global prefix}_{family, toolPrefix or server name}_{tool}, the
//     global prefix being Options.Prefix ("x" by default), so toolPrefix
//     "ec" and tool "echo" give "x_ec_echo"; the middle part is not
//     repeated when the tool's own name already starts with it and "_"
//     (tool "git_status" of server "git" is "x_git_status").
//   - Each exposed tool keeps its server's definition (description, title,
//     input and output schema, annotations) with Name set to the exposed
//     name, and the server's own name for routing.
//   - Families, by muster's rules (family.go): the running members of a
//     family (Naming.Family) share one tool per tool name,
//     x_<family>_<tool>, whose description names the members that offer
//     it and whose input schema gains the required string argument
//     Naming.InstanceArg, enumerating them. Members declaring different
//     instance arguments fall back entirely to their own names
//     (x_<toolPrefix or server>_<tool>); a tool the members describe
//     differently, or one that takes an argument named as the instance
//     argument, falls back alone. Resolve picks the member by that
//     argument (by server name) and removes it from the arguments; a
//     missing instance, or one that does not run or offer the tool, is
//     muster's error naming the argument or the instance and the
//     instances on offer.
//   - Gone remembers the tools a server offered when it stopped running
//     (family tools aside), until it or another server offers the name
//     again, for MaxGoneServers servers, so that a call can say the server
//     is not running.
//   - Update, Set and Remove report exactly the exposed names whose answer
//     changed: a name that appeared or disappeared, or whose owner or
//     definition (a family's instances included) is now another. Nothing
//     else, so a caller can react to them alone.
//   - Subscribers (Subscribe) get each change, in order, synchronously,
//     with the change in place: the same changed names, and the changes of
//     the running servers themselves (started, gone, listed again).
//   - Two servers may expose one name (the same toolPrefix); the name is
//     offered while either offers it, and Lookup answers the server whose key
//     sorts first, with its definition, so the answer never depends on the
//     order of calls.
//   - Each running server's last listing time is kept (Servers), for the
//     catalogue-age metric.
//   - It also knows which servers are starting (SetStarting) and the name
//     prefix their tools will have, so that StartingFor tells a tool that
//     may yet come from one that is missing.
//   - Safe for concurrent use; every slice returned is the caller's own;
//     definitions are shared and never changed.
package catalogue
