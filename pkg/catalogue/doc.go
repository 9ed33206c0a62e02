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
//   - Exposure policies (exposure.go, SetExposure): each server's,
//     running or not, from the MCPServer's annotation musterd.io/exposure,
//     set by its reconciler. A policy keeps the tools its include and
//     exclude globs keep (by their own names), names them by its prefix
//     (absent: muster's rule; "": none; else {prefix}_{tool}) and its
//     overrides' names, and gives them its overrides' descriptions and
//     annotations. A call of the new name resolves to the server's own
//     name; the old name is gone. A change of policy re-exposes the
//     server's tools at once, from its last listing: nothing is listed
//     again, nothing restarts. A family's members keep muster's shared
//     names: only their filters apply. ServerTools is the server's own
//     tools its filter keeps, under their own names and definitions (the
//     view of the server alone); Why says which policy hides or renames a
//     name muster's rule would give.
//   - A name exposed by two servers that are not members of one family
//     sharing it (the same toolPrefix, bare names, a rename) is a
//     conflict, never a shadowing: neither is offered it, each says so
//     (Conflicts), and the Change that begins or ends one names every
//     server whose conflicts changed; the name comes back when one of them
//     no longer exposes it. The same for a policy giving two of one
//     server's tools one name.
//   - Options.NoPrefix drops the global prefix (muster's
//     aggregator.musterPrefix set to ""): {toolPrefix or server}_{tool}.
//   - Each running server's last listing time is kept (Servers), for the
//     catalogue-age metric.
//   - It also knows which servers are starting (SetStarting) and the name
//     prefix their tools will have, so that StartingFor tells a tool that
//     may yet come from one that is missing.
//   - Per-owner views (owners.go): an owner (identity.Identity's Owner, a
//     user or a session) may connect to servers on its own (UpdateFor,
//     RemoveFor, ForgetOwner: a protected server's connection of the
//     user's). For(owner) is that owner's view: the catalogue's running
//     servers plus the owner's, under the same rules (prefix, toolPrefix,
//     the server's exposure policy, whoever connects), with Has, Lookup,
//     Tool, Tools, Definitions, Resolve, ServerTools, Conflicts, Why and
//     Gone as the catalogue answers them; nobody else's view, the
//     catalogue's own included, has the owner's servers, and a name of
//     them resolves there as ErrUnknownTool. A server the owner connects
//     to that also runs in the catalogue is the owner's in its view. A
//     name the owner's server exposes that another server exposes too is
//     a conflict in the owner's view alone, held back and said in Why and
//     Conflicts. An owner's server joins its family with the catalogue's
//     running members (and the owner's other ones), never with another
//     owner's. What an owner's servers offer is not remembered as gone.
//     The view's Definitions is the same slice until the catalogue or the
//     owner's servers change. For("") is the catalogue itself: nothing
//     changes for it.
//   - Every Change names its Owner: "" for a change of the catalogue,
//     which every view shows; an owner's for a change of its view alone
//     (its servers, or a policy of a server only it connects to), whose
//     Tools and Conflicts are as For(owner) answers them.
//   - Safe for concurrent use; every slice returned is the caller's own;
//     definitions are shared and never changed.
package catalogue
