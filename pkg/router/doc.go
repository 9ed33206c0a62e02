// Package router is what the MCP endpoint serves of the managed servers:
// their tools, resources and prompts, and the calls into their live
// sessions.
//
// Place in the pipeline: at the end, beside the status store, on the
// runtime side. It reads the catalogue (kept by the runtime bridge from
// the supervisor's observations) and calls through the supervisor; the
// endpoint (package mcpserve) consumes it through an interface of its own,
// which *Router satisfies. It knows nothing of the bus.
//
//	supervisor ──▶ bridge ──▶ catalogue ──Subscribe──▶ Router ──OnChange──▶ endpoint (list_changed)
//	endpoint ──CallTool──▶ Router ──Resolve──▶ catalogue
//	                             └──CallTool──▶ supervisor ──▶ the server's live session
//
// Guarantees:
//
//   - Tools lists exactly the catalogue: the tools of the servers that run,
//     under their exposed names, with their definitions, sorted; nothing
//     is offered before its server answered tools/list.
//   - CallTool routes an exposed name to the server that offers it, a
//     family tool to the member its instance argument names (the argument
//     removed). An unknown tool fails at once, naming it; a family's
//     member that does not run is "not available on server" (muster's
//     text), naming the members that do. A tool whose server stopped
//     running (catalogue.Gone) is claimed (Claims), so that its call
//     reaches the router though it is not listed, and fails with muster's
//     "server not found: <server>" and the supervisor's error naming the
//     server and its state, or saying that its definition is deleted
//     (Options.Declared); one starting again is waited for. The server's
//     result passes through unchanged; a server that is starting or being
//     restarted is waited for (supervisor.Options.CallWait); one that is
//     not running fails at once; one that dies mid-call fails the call
//     within a second; a spec-change restart drains the calls in flight
//     (supervisor.Options.DrainTimeout). Progress and cancellation pass
//     through.
//   - OnChange watchers are told, from a goroutine of the router's and
//     never under the supervisor's lock, after every change of Tools()
//     (and of Resources(), ResourceTemplates() or Prompts()):
//     a server started, stopped, restarted with other tools, deleted, a
//     family member gone, or a server's own tools/list_changed. Changes
//     that come while a watcher runs are coalesced into one more call.
//   - Resources, resource templates and prompts are listed from each
//     running server in the background (at its start, after it listed its
//     tools again, and when it sends resources/ or prompts/list_changed),
//     answered at once from that listing, sorted, and routed by muster's
//     naming (see listings.go). A read or get of a name not listed yet
//     lists every server again first. What a server fails to list is left
//     out, never fatal.
//   - Subscribe subscribes to an exposed resource at the server that
//     offers it (supervisor.Subscribe), and OnResourceUpdated watchers get
//     the server's notifications/resources/updated under the exposed URI.
//     A server with a new session (started again, or a remote's session
//     renewed: supervisor.Session) is subscribed again once it has been
//     listed, and only then: other listings of the same session subscribe
//     nothing (subscribe.go).
//   - Metrics per real tool, not per meta-tool:
//     musterd_mcp_tool_calls_total{server,tool,result} (result success,
//     tool_error or error), musterd_mcp_tool_call_duration_seconds
//     {server,tool}, and musterd_mcp_catalogue_age_seconds{server}, the
//     time since each running server's tools were last listed.
//   - Each call is logged at debug with its arguments through
//     redact.String.
package router
