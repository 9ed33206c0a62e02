// Package router is the one way in for a tool call, and what the MCP
// endpoint serves of the managed servers.
//
// The exposed set is the router's: the core tools (Options.Core, package
// coretools) first, then the running servers' tools (from the catalogue),
// then the further sources (Options.Sources: the workflows, package
// workflowrun); the first to offer a name serves it, a later one is
// skipped with a warning. Every call goes through CallTool: the
// endpoint's (package mcpserve) and the workflow steps' (the engine is
// handed the router as its caller, once both exist, since workflows call
// workflows). The caller of a call (view, session, correlation ID, how to
// notify its session) travels in its context as a Caller.
//
// Place in the pipeline: at the end, beside the status store, on the
// runtime side. It reads the catalogue (kept by the runtime bridge from
// the supervisor's observations) and calls through the supervisor; it
// knows its other sources only by the Source interface, and nothing of
// the bus.
//
//	supervisor ──▶ bridge ──▶ catalogue ──Subscribe──▶ Router ──OnChange──▶ endpoint (list_changed)
//	                                                        └──OnOwnerChange(owner)──▶ that owner's sessions
//	endpoint, engine ──CallTool──▶ Router ──▶ core tools, workflows (Source.CallTool)
//	                                     └──Resolve──▶ catalogue ──▶ supervisor ──▶ the server's live session
//
// A change of what is exposed reaches the endpoint by one path, and runs
// under these locks on the way:
//
//	supervisor.mu ─▶ bridge.OnChange ─▶ catalogue.apply (its write lock) ─▶ the router's subscription:
//	    marks the change under router.mu, starts the delivering goroutine if none runs; never blocks
//	a source's change (SourceChanged) ─▶ the same mark
//	the delivering goroutine (no lock held) ─▶ OnChange watchers: the endpoint's Refresher.Kick, a send that never blocks
//	the Refresher's goroutine ─▶ mcpserve.Server.Refresh (its refreshMu) ─▶ Router.Tools (exposedMu) ─▶ list_changed
//
// Guarantees:
//
//   - Tools recomputes the exposed set only when a source's offer changed
//     (the same *mcp.Tool values in the same order are no change); a call
//     routes by the set last computed, and a name not in it is looked up
//     in each source's offer as it is now, so a tool is callable as soon
//     as its source offers it; a miss never recomputes the set. A name nothing offers or claims fails at once
//     with ErrUnknownTool (which catalogue.ErrUnknownTool also matches),
//     saying "tool not found".
//
//   - Per caller (owners.go): a call and ToolsFor read the catalogue in
//     the caller's view, catalogue.For(identity.From(ctx)'s Owner): the
//     running servers' tools plus those of the servers the caller's
//     owner connects to on its own (catalogue.UpdateFor), by the same
//     rules and with the same sources around them; a caller without an
//     identity, or whose owner connects to nothing of its own, sees Tools
//     (the same set). A tool of another owner's connection is not in the
//     caller's listing, and its call fails as any unknown tool does
//     (ErrUnknownTool, "tool not found"), naming nothing of its owner; a
//     name the caller's own connection and a running server both expose
//     is held back for that caller alone. A change of one owner's view
//     alone is told to OnOwnerChange's watchers with that owner, never to
//     OnChange's. Resources, prompts, completions and the view of one
//     server alone (Server) are the running servers' only, whoever asks.
//
//   - Each call is logged once, at debug, when it returns: the tool, its
//     source, the server and its tool name for a server's tool, the view
//     and session, the correlation ID, the arguments through
//     redact.ArgsJSON, the result and the duration.
//
//   - The servers' part of the exposed set is exactly the catalogue: the
//     tools of the servers that run, under their exposed names, with their
//     definitions; nothing is offered before its server answered
//     tools/list.
//
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
//
//   - OnChange watchers are told, from a goroutine of the router's and
//     never under a lock of anyone's, after every change of what is
//     exposed: of the servers' tools (a server started, stopped, restarted
//     with other tools, deleted, a family member gone, or a server's own
//     tools/list_changed), of Resources(), ResourceTemplates() or
//     Prompts(), and of a source's offer (SourceChanged: a workflow became
//     runnable or not). Changes that come while a watcher runs are
//     coalesced into one more call. It is the one path by which a change
//     of what is exposed reaches the endpoint (the locks it runs under are
//     drawn above).
//
//   - The view of one server alone (Server, CallServerTool, …) holds the
//     tools, prompts and resources its exposure policy keeps
//     (catalogue.ServerTools), under its own names; a call, read or get of
//     one the policy leaves out fails as an unknown tool. Prompts and
//     resources on the other views are filtered and prefixed by the policy
//     too.
//
//   - Resources, resource templates and prompts are listed from each
//     running server in the background (at its start, after it listed its
//     tools again, and when it sends resources/ or prompts/list_changed),
//     answered at once from that listing, sorted, and routed by muster's
//     naming (see listings.go). A read or get of a name not listed yet
//     lists every server again first. What a server fails to list is left
//     out, never fatal.
//
//   - Complete routes a completion/complete by the prompt name or the
//     resource template URI as Prompts and ResourceTemplates show them
//     (the tables GetPrompt and ReadResource route by) to the server that
//     offers it, the reference rewritten to the server's own name or
//     template, the argument and context.arguments unchanged, the result
//     the server's. A name not listed lists every server again first; one
//     still unknown fails with ErrUnknownPrompt or ErrUnknownTemplate
//     naming it; a running server that did not advertise completions with
//     ErrNoCompletions naming it; a server down with the supervisor's
//     error, as a call's (complete.go).
//
//   - Subscribe subscribes to an exposed resource at the server that
//     offers it (supervisor.Subscribe), and OnResourceUpdated watchers get
//     the server's notifications/resources/updated under the exposed URI.
//     SubscribeServer does the same for a server's view, by the server's
//     own URI, and OnServerResourceUpdated watchers get its updates so.
//     Both share one subscription per server resource: it is made when
//     the first wants it and ended when the last no longer does, the
//     check and the server's call taking turns per resource, so the
//     server is subscribed exactly while someone wants it. A server with
//     a new session (started again, or a remote's session renewed:
//     supervisor.Session) is subscribed again to all of them once it has
//     been listed, and only then: other listings of the same session
//     subscribe nothing (subscribe.go).
//
//   - Metrics per real tool, not per meta-tool:
//     musterd_mcp_tool_calls_total{server,tool,result} (result success,
//     tool_error or error), musterd_mcp_tool_call_duration_seconds
//     {server,tool}, and musterd_mcp_catalogue_age_seconds{server}, the
//     time since each running server's tools were last listed.
//
//   - A short history of each server's calls (calls.go): the calls that
//     reach a server (CallTool, CallServerTool; a refused call reaches
//     none and counts for none) are counted per server in intervals of
//     Options.CallInterval (10s), the failed ones (an error or an isError
//     result) apart, and CallHistory serves the last CallIntervals (60)
//     of them. Memory is bounded: a server's ring goes once its calls are
//     older than the history, or when its definition is deleted.
//     Options.OnCallsCounted is told each interval that had calls of a
//     server once it is over, exactly once, a burst of calls being one
//     notice; the timer that tells it is armed by the interval's first
//     call, so nothing runs while nobody calls. The clock is the time
//     package's, virtual under testing/synctest.
package router
