// Package mcpserve is musterd's MCP endpoint: it serves the tools of the
// servers musterd runs, its core tools and (through Providers) its
// workflows to MCP clients, the way `muster serve` does for muster's CLI,
// agent and IDEs.
//
// Place in the pipeline: at its end, an edge beside the HTTP API (package
// api). It reads what the stages keep (the index, the status store, the
// reconcilers' observed status, muster's view of the events, package
// musterevents) for the core tools, and reaches the running servers
// only through its Backend interface (package router implements it over
// the supervisor's sessions and the catalogue). The daemon calls Refresh
// whenever what is exposed may have changed.
//
// Two views of one exposed set, each an mcp.Server of the official go-sdk:
//
//	/mcp, /sse + /message  muster's view: tools/list is the eleven meta-tools
//	                       (list_tools, describe_tool, list_core_tools,
//	                       filter_tools, call_tool, list_resources,
//	                       describe_resource, get_resource, list_prompts,
//	                       describe_prompt, get_prompt) with muster's
//	                       arguments and result shapes
//	/mcp/direct            every exposed tool natively, with its real schema
//	/health                {"status":"ok"}, as muster answers
//
// Guarantees:
//
//   - The exposed set is one: core_… tools first, then the Backend's x_…
//     tools, then each Provider's; a name is served by the first source
//     that offers it. list_tools, describe_tool, call_tool, /mcp/direct and
//     Server.CallTool (the router workflow steps call through) all read the
//     same set, replaced whole by Refresh, and kept as it is by a Refresh
//     after which every source offers the very tools it did.
//   - Every transport speaks the protocol versions 2024-11-05, 2025-03-26,
//     2025-06-18 and 2025-11-25. The newest, 2026-07-28 (SEP-2575), is not
//     offered: the go-sdk (v1.8) serves it on a stateless streamable
//     handler only, and musterd's are stateful, since the older versions'
//     clients need their sessions (whose GET streams carry list_changed,
//     resource updates and core_events' follow). A client asking for it
//     hears so from server/discover and falls back to 2025-11-25, with all
//     that follows (versions_test.go). The views themselves handle the
//     newest protocol's subscriptions/listen (listen_test.go), for a
//     transport that serves it.
//   - Refresh adds and removes on /mcp/direct exactly the tools whose
//     definition appeared, changed or went (and on both views the
//     resources and prompts), so every session receives list_changed (the
//     go-sdk batches changes 10 ms apart into one) and its next list shows
//     the new set. Nothing changed, nothing is sent. (A session of the
//     newest protocol receives it while a subscriptions/listen stream of
//     its asks for it, as that protocol has it: a go-sdk client opens one
//     as it connects if it has a handler for list changes.)
//   - call_tool answers muster's envelope: one text item holding
//     {"isError","content","structuredContent"}, the outer isError and
//     structuredContent mirroring the tool's; a call that cannot be made is
//     the plain error "Tool execution failed: …".
//   - Arguments, content, structuredContent, isError, progress and
//     cancellation pass through to the Backend unchanged. A client that
//     ends its streamable session (a DELETE) or closes its SSE stream
//     mid-call has its calls cancelled (cause ErrSessionClosed), which the
//     go-sdk alone does not do: it would hold the session open until they
//     finished. (SSE is served by sse.go over the go-sdk's own
//     SSEServerTransport, since its SSEHandler keeps each GET's session to
//     itself.)
//   - Every request is answered; what is wrong with one is a JSON-RPC or
//     tool error naming it: no token (401), a follower asked (503, naming
//     the leader), a body over Options.MaxBodyBytes (413), malformed
//     JSON-RPC (parse error or invalid request, saying where), an unknown
//     session ID (404), an unknown method or tool, arguments of the wrong
//     type for a meta or core tool (naming the argument and the types).
//   - A call of a name not listed goes to Server.CallTool on every view,
//     /mcp/direct included (a receiving middleware, unlisted.go): a claimed
//     name (a declared workflow that cannot run, or a tool whose server
//     stopped running) is answered by its claimer, saying what is missing;
//     any other is musterd's invalid-params error naming the tool ("unknown
//     tool …: tool not found: …").
//   - A managed server's tool the go-sdk would reject (an input schema not
//     of type object) is left off /mcp/direct with a warning, never a
//     panic; it stays reachable through call_tool.
//   - Secrets never reach a client or a log: env values and headers are
//     redacted in the core tools' answers (api/shared.RedactMCPServer), error texts
//     pass through redact.String, and each call is logged at debug with its
//     correlation ID and its arguments redacted.
//   - With a token configured, every path but /health needs
//     "Authorization: Bearer <token>", checked by api/shared.Bearer as the API
//     checks its own.
//   - Resources are subscribable when the Backend is a ResourceSubscriber
//     (package router is): resources/subscribe on either view (in the
//     newest protocol, a subscriptions/listen stream naming the resource,
//     while it lasts) subscribes at the server that offers the resource,
//     once however many sessions want it, and unsubscribes when the last
//     one unsubscribes or ends; a server's notifications/resources/updated
//     reaches the sessions subscribed, under the exposed URI
//     (subscribe.go). A subscription the server refuses is the client's
//     error (the go-sdk's client does not wait for a listen stream's
//     answer, so it does not report one). The subscribes and unsubscribes
//     of one URI take turns, each with its server call, so the server is
//     subscribed exactly while a session is recorded; other URIs' do not
//     wait for them. An unsubscribe is carried through whatever becomes of
//     its request (a listen stream's ends with the stream).
//   - core_events lists muster's events (musterevents: MCPServerCreated,
//     WorkflowStepCompleted, …), newest first, at most limit (50), as
//     muster does; a resourceType it does not know matches nothing, as in
//     muster. Its follow returns those and then writes each later event as
//     notifications/muster/event to the session's stream (a streamable
//     session's standalone GET stream, or an SSE session's stream),
//     between the go-sdk's own events; a follow has its own goroutine and
//     bounded queue, so a slow session loses its own events and delays
//     nothing else, and it ends with the session.
//   - core_workflow_available, core_workflow_list and core_workflow_get
//     say whether a workflow is available as it is judged at the moment
//     of the call (Options.WorkflowAvailability: every tool it needs,
//     through the workflows it calls at any depth, offered now), as muster
//     judges it at each call, so an answer never lags a server's start;
//     core_workflow_get lists the tools it lacks as missingTools.
package mcpserve
