// Package mcpserve is musterd's MCP endpoint: the views and sessions
// through which MCP clients reach the exposed tools (the core tools, the
// servers musterd runs, its workflows), the way `muster serve` does for
// muster's CLI, agent and IDEs.
//
// Place in the pipeline: at its end, an edge beside the HTTP API (package
// api). It lists and calls every exposed tool, and reads the running
// servers' resources and prompts, only through its Backend interface:
// package router, the one way in for a tool call, implements it. It
// implements no exposed tool itself, only muster's meta-tools (declared
// with package tooldef). It puts each call's caller (view, session,
// correlation ID, a way to notify the session's stream) into the call's
// context as a router.Caller. The daemon calls Refresh whenever what is
// exposed may have changed.
//
// Two views of one exposed set and a view of each server alone, each an
// mcp.Server of the official go-sdk:
//
//	/mcp, /sse + /message  muster's view: tools/list is the eleven meta-tools
//	                       (list_tools, describe_tool, list_core_tools,
//	                       filter_tools, call_tool, list_resources,
//	                       describe_resource, get_resource, list_prompts,
//	                       describe_prompt, get_prompt) with muster's
//	                       arguments and result shapes
//	/mcp/direct            every exposed tool natively, with its real schema
//	/mcp/servers/<name>    one managed server alone, as it offers itself
//	                       (serverview.go), through the Backend's
//	                       ServerBackend
//	/health                {"status":"ok"}, as muster answers
//
// Guarantees:
//
//   - The exposed set is the Backend's: /mcp/direct shows it as the last
//     Refresh read it, list_tools, describe_tool and filter_tools as the
//     Backend answers the caller at the call (ToolsFor: the same set, for
//     a caller without tools of its own), and call_tool and /mcp/direct
//     hand every call to the Backend. A
//     Refresh encodes only the tools it has not seen (a Backend returns the
//     same *mcp.Tool for a tool unchanged).
//   - Per owner (owners.go): list_tools, describe_tool, list_core_tools
//     and filter_tools show the caller's set (Backend.ToolsFor: the
//     exposed set plus the tools of the servers its identity's owner
//     connects to on its own, never another owner's), and so does
//     /mcp/direct's tools/list for a caller with such tools (ownlist.go,
//     paged as the go-sdk pages), the exposed set for any other. ToolsChangedFor sends
//     notifications/tools/list_changed to one owner's sessions alone (those
//     whose calls carried that owner), on their open streams.
//   - Every streamable view (/mcp, /mcp/direct, /mcp/servers/<name>)
//     speaks both generations of the protocol on one URL: 2024-11-05,
//     2025-03-26, 2025-06-18 and 2025-11-25, with initialize and a
//     session, on a stateful go-sdk handler; and 2026-07-28 (SEP-2575),
//     sessionless, on a stateless one (the go-sdk serves it on no other)
//     over the same mcp.Server. A POST without Mcp-Session-Id goes to the
//     stateless handler when its MCP-Protocol-Version header says
//     2026-07-28 or later, or, without that header, when it is
//     server/discover or carries that version in its _meta and is not
//     initialize; everything else (GET, DELETE, a session's requests,
//     initialize, a batch) to the stateful one (generations.go).
//     initialize asking for 2026-07-28 falls back to 2025-11-25; sent with
//     the 2026-07-28 header it is 404, method not found, as that
//     generation has no initialize. server/discover lists every version,
//     2026-07-28 first. The go-sdk checks a new request's routing headers
//     against its body, and hints ttlMs 0 on every list (no client caches
//     a list past the reconcile that changes it). SSE speaks the older
//     generation only (versions_test.go, generations_test.go).
//   - A request of 2026-07-28 is a session of its own to the go-sdk, for
//     that one POST: it has no notifier (core_events' follow needs a
//     session's stream) and carries no peer.Peer.
//   - A server's input-required result (2026-07-28's way of asking the
//     client) to a tools/call, prompts/get or resources/read of a
//     2026-07-28 client is relayed to it as it is, on every view (the
//     request carries peer.WithRelay and its capabilities: relay.go, and
//     enter for tools), and the client's retry (inputResponses,
//     requestState) reaches the server as a peer.Round; a 2025-11-25
//     server's questions reach it the same way, bridged by the
//     supervisor. The server's requestState is sealed (requeststate.go):
//     bound to the view, the kind of call and the tool's or prompt's name
//     or the resource's URI, the session if any and the caller's
//     Authorization, good once and for 10 minutes; a state that does not
//     open is -32602 before the server sees anything. A client of the
//     older generation is never relayed to: a server's questions reach it
//     as requests on its session. A meta-tool's result has no room for
//     input requests, nor its arguments for answers: call_tool,
//     get_prompt and get_resource take no questions for a 2026-07-28
//     client (peer.WithoutRelay), and a server's question fails them,
//     saying what to use instead.
//   - Refresh adds and removes on /mcp/direct exactly the tools whose
//     definition appeared, changed or went (and on both views the
//     resources and prompts; on each server's view made, its server's
//     tools, resources and prompts, whether or not the exposed tools
//     changed), so every session receives list_changed (the
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
//   - A call of a name not listed goes to the Backend on every view,
//     /mcp/direct included (a receiving middleware, unlisted.go): a name
//     the Backend claims (a declared workflow that cannot run, or a tool
//     whose server stopped running) is answered, saying what is missing;
//     any other is an invalid-params error naming the tool ("unknown tool
//     …: tool not found: …").
//   - A managed server's tool the go-sdk would reject (an input schema not
//     of type object) is left off /mcp/direct with a warning, never a
//     panic; it stays reachable through call_tool.
//   - Secrets never reach a client or a log: error texts pass through
//     redact.String, and a meta-tool call is logged at debug with its
//     correlation ID and its arguments redacted (an exposed tool's call is
//     logged once, by the router).
//   - With a token configured, every path but /health needs
//     "Authorization: Bearer <token>", checked by api/shared.Bearer as the API
//     checks its own.
//   - /mcp and /mcp/direct answer completion/complete, and advertise
//     completions, when the Backend is a Completer (package router is):
//     the reference names a prompt or URI template as those views list
//     them, and the server that offers it completes (complete.go). A
//     reference nothing offers, or whose server offers no completions, is
//     an invalid-params error (-32602) naming it; a server down is its
//     error, as a call's.
//   - A server's view (/mcp/servers/<name>) advertises exactly its
//     server's capabilities. When the server offers resource
//     subscriptions and the Backend is a ServerSubscriber (package router
//     is), resources/subscribe and unsubscribe on the view pass through
//     by the server's own URIs, counted across the view's sessions as the
//     other views' are, and the server's notifications/resources/updated
//     reach the view's sessions subscribed (subscribe.go); the router
//     shares one subscription at the server with the other views'.
//   - A signed-in caller with a connection of its own to a server (a login
//     to a protected server, single sign-on; PersonalServers) gets a view
//     of its own of that server, made from what its connection offers (its
//     initialize, its tools; no resources or prompts are listed on a
//     user's connection) and calling through it; no other caller's request
//     reaches that view or its sessions, and it ends, sessions closed, when
//     the connection does (ToolsChangedFor of the owner refreshes it).
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
//   - A call's router.Caller can notify its session: Notify writes a
//     JSON-RPC notification to the session's stream (a streamable
//     session's standalone GET stream, or an SSE session's stream), between
//     the go-sdk's own events, never inside one; Done is closed when the
//     session ends. core_events' follow (package coretools) writes
//     notifications/muster/event so.
//   - Every tool call of the older generation, on every view, carries its
//     client as a peer.Peer
//     bound to the call (peer.go): what a server asks of that client while
//     it handles the call (sampling, elicitation, roots) and what it logs
//     travel on the call's own stream, or on the session's own stream
//     once the call has returned; a session's logging/setLevel and
//     notifications/roots/list_changed are noted for the server sessions
//     kept on its behalf (package supervisor's lanes).
package mcpserve
