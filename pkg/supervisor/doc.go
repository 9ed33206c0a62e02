// Package supervisor runs and watches MCP servers: stdio servers as local
// processes, streamable-http and sse servers as remote connections, each
// through the official MCP Go SDK.
//
// Place in the pipeline: a library under the MCPServer reconciler, beside
// the pipeline rather than in it. It knows nothing of the bus; it reports
// every change of a server's observed state through Options.OnChange, which
// the wiring bridges to ServiceStateChanged, and the reconcile that follows
// calls Ensure again. Ensure never waits for a start: the outcome of a
// start reaches the reconciler that way too, like a crash.
//
// Guarantees:
//
//   - Ensure is idempotent and level-triggered: it makes the server run the
//     given spec, starting it if it is not running, restarting it if a
//     field that matters changed (type, command, args, env, url, headers,
//     timeout, toolPrefix; not description), and leaving it alone
//     otherwise.
//   - Ensure returns at once (Starting or Connecting): a start, and the
//     retiring of what ran before, runs on a goroutine of the supervisor's
//     own per server, at most StartConcurrency starts at a time (default
//     16), so slow servers start side by side and hold none of the
//     caller's goroutines. Wait waits for the outcome, for those who must.
//   - Never two operations on one server at once: one goroutine applies
//     Ensure's specs to a server, one after the other, and Stop waits for
//     it; a new process starts only once the last one is reaped.
//   - A spec changed during a start cancels it (no failure: no backoff) and
//     the new spec starts next. Stop during a start, running or waiting
//     for a slot, cancels it and returns once its process is reaped; no
//     start follows.
//   - A stdio server is exec'd directly, without a shell, with its args and
//     its env on top of only PATH and HOME of musterd's (all of musterd's
//     environment but MUSTERD_TOKEN with Options.InheritEnv), as the leader of its own process
//     group, its stderr kept as a bounded tail. Stopping it closes its
//     stdin, sends SIGTERM to the group and, after StopGrace, SIGKILL; when
//     its main process dies, whatever is left of its group is killed too.
//     Stop and Shutdown return only once the process is reaped, so no
//     process they stopped outlives them; Shutdown also waits for every
//     goroutine that could start one, so none starts after it. (A process that leaves the group
//     with setsid escapes this; on Linux the server's main process also
//     gets SIGKILL if musterd dies without stopping it.)
//   - Generations: a stdio or streamable-http server's shared session
//     asks for MCP 2026-07-28 (server/discover) and speaks it if the
//     server agrees; one that does not (an older server, a stateful HTTP
//     one) is spoken to in the newest older version it agrees to in
//     initialize (2025-11-25 at most); an SSE server in 2025-11-25 at
//     once. A lane speaks its client's generation: 2025-11-25 for a
//     client of that generation, whose server then asks it classic
//     requests (instance.go). Observed's ProtocolVersion says what the
//     shared session agreed. Everything below holds in both; where a
//     2026-07-28 session lacks a means (ping, logging/setLevel,
//     roots/list_changed, resources/subscribe), musterd uses that
//     generation's own, as each item says. SetProtocolVersion pins a
//     server to a version (protocolpin.go): its shared session and its
//     lanes ask for none newer, whatever their clients' generation; the
//     server may still agree to an older one. The pin is part of the hash
//     Ensure compares, so a changed pin restarts the server's session as a
//     changed spec does, and an unchanged one restarts nothing; Stop
//     forgets it.
//   - A start waits for initialize and tools/list within the spec's timeout
//     (Options.StartTimeout, default 2m, if it sets none; separate from
//     PingTimeout); a server that hangs is killed and Failed with a timeout
//     error naming it. Waiting for a start slot does not count.
//   - Health: each connected server is pinged every PingInterval (and at
//     once when CallDone reports a call that failed in the transport). A
//     crash is Failed at once. A remote whose connection drops (its event
//     stream closes, a call fails in the transport) is Disconnected at
//     once: the SDK's own reconnects are off, and the supervisor
//     reconnects on the backoff instead (Connecting, Disconnected while
//     refused, then Connected). A remote that answers its session with 404
//     (it restarted) gets a new session at once, with no failure. A server
//     that does not answer a ping within PingTimeout (hung, stdio or
//     remote) is Failed. Each is reported through OnChange at once. On a
//     2026-07-28 session, which has no ping, the health check asks for the
//     first page of the server's tools (else resources, else prompts).
//   - A remote that answers 401 Unauthorized at its start is Auth Required
//     (muster's state), with the challenge's resource metadata and scope in
//     LastError (*AuthRequiredError): no failure is counted and no retry
//     armed, and Ensure leaves it so for the same spec. A changed spec (a
//     credential in its headers, say), or a Stop and a new Ensure (a
//     restart), starts it again. Options.HTTPTransport is the base of every
//     remote's connection (musterd's extra CAs).
//   - User connections (users.go): ConnectAs opens a user's own session
//     to a remote server (streamable-http or sse; a stdio server is an
//     error), keyed by server and owner (identity.Identity.Owner), at most
//     MaxUserConnectionsPerServer (256) per server. Every HTTP request of
//     it carries "Authorization: Bearer <token>", asked of the user's
//     oauth2.TokenSource for that request, so a refreshed token is used
//     from the next request on (userbearer.go). A 401 at the opening is a
//     *AuthRequiredError and no connection is kept. A call of any kind
//     (calls.go, subscribe.go) whose ctx carries an identity with a
//     connection to the server runs on it, ahead of the shared instance,
//     whatever state that is in; a call whose caller has none, to a
//     server that is Auth Required, fails at once with an error wrapping
//     ErrAuthorizationRequired ("mcp server NAME: authorization required:
//     log in with core_auth_login"). A user connection has the health
//     checks of an instance (a ping every PingInterval and after a call
//     that failed in the transport), lists its own tools, relists them on
//     the server's tools/list_changed, and ends with the first of:
//     DisconnectAs; a Stop of its server or a change of its spec; its
//     connection failing (the server closes it, a ping fails); or a 401
//     to a request whose token the source, asked again, gave anew or not
//     at all (or a source that gives no token): then it ends reported
//     TokenRefused, and its call fails with ErrAuthorizationRequired. A
//     token other than the refused one gets the request one more try.
//     Calls under way on a connection that ends by DisconnectAs, a Stop
//     or a spec change fail with ErrStopped, and return before its
//     session closes. It is never reopened by the supervisor. Every
//     opening, relisting and end is reported through OnUserChange, in
//     order, in OnChange's queue (no lock held). User connections never
//     change the shared instance's state or Observed; they are not
//     counted in InFlight. The server's requests to its client on one
//     (sampling, elicitation, roots), and a 2026-07-28 server's input
//     requests musterd would fulfil, are refused with -32600 saying why
//     (a client that takes input-required results itself, peer.Relays,
//     still gets them as they are); its log messages go to the clients of
//     its user that called through it. A user's token never appears in logs, errors or UserObserved:
//     it is set on each request as it leaves, and the tokens a
//     connection sent are scrubbed from its messages besides.
//   - Status fields: LastError is set only while the server is down;
//     LastFailure and LastFailureTime keep the last failure after it
//     recovered; RestartCount counts restarts of a process that ran, not
//     failed starts or reconnects (ConsecutiveFailures); LastConnected is
//     the last successful initialize, ping or call, refreshed quietly.
//   - Backoff: a failed server is not started again before its
//     NextRetryAfter, however often and by whomever Ensure is called, and
//     whatever other spec was asked for meanwhile; Ensure returns a
//     *RetryLaterError instead. Each consecutive failure
//     doubles the delay (Backoff: 1s to 5m, plus up to 10% jitter); a
//     server that runs for StableAfter clears its streak. A server that
//     crashes at once therefore starts at most 6 times in its first minute.
//   - Secrets: env values, headers and users' tokens never appear in
//     logs, errors, LastError, Observed or UserObserved. Every message is scrubbed of their literal
//     values (from 4 characters on) and then passed through redact.String;
//     SpecHash is keyed by a secret of the supervisor's own.
//   - Observed carries the server's own tool definitions (ToolDefs) beside
//     their names, when they were listed (ListedAt, moved by every relist
//     after the server's tools/list_changed) and the spec's family.
//   - Calls (calls.go: CallTool, ListResources, ListResourceTemplates,
//     ReadResource, ListPrompts, GetPrompt) go to the server's live
//     session. One to a server that is Starting, Connecting or being
//     replaced by Ensure waits for it, up to CallWait (30s), then fails
//     with ErrNotReady; one to a server stopped, failed, disconnected or
//     unknown fails at once with ErrNotRunning, naming its state and last
//     error. A server that dies mid-call fails its pending calls within a
//     second with ErrDied (stdio: the SDK fails them on EOF and the
//     monitor's verdict follows within exitSettle; remote: the transport
//     error makes the monitor ping at once, and its failure cancels them).
//     Progress notifications go back to the caller under its own token;
//     a caller's cancellation reaches the server as notifications/cancelled.
//     Subscribe and Unsubscribe (subscribe.go) go the same way, and are a
//     no-op for a server that offers no resource subscriptions; every
//     notifications/resources/updated a server sends goes to the
//     WatchResourceUpdates watchers. On a 2026-07-28 session a
//     subscription is a listen stream, and Subscribe returns once the
//     server acknowledged it, or fails after PingTimeout without its
//     acknowledgement (a refusal, which the go-sdk keeps to itself, reads
//     so). A subscription lasts as long as the
//     server's session, which Session identifies: its caller subscribes
//     again when Session says the session is another.
//     Every call is bounded by the server's spec.timeout (default
//     v1alpha1.DefaultMCPServerTimeout), whoever made it: one the server
//     does not answer in time is cancelled on the server and fails naming
//     the server, the method and tool, and the timeout.
//   - A spec-change restart drains: calls in flight on the old instance
//     finish there, for up to DrainTimeout (10s), before it is stopped
//     (on the supervisor's goroutine for the server: no caller waits);
//     new calls meanwhile wait for the new instance. Calls still running
//     then fail with ErrStopped. Stop (a delete) and Shutdown do not
//     drain: the server is going, and its calls fail at once with
//     ErrStopped, since waiting would only delay the delete.
//   - OnChange is called one change at a time, in order, with no lock held.
//     OnChangeSync gets the same changes, in the same order, under the
//     supervisor's lock, before the call that made each returns: when Ensure
//     or Wait returns a server Running, it has seen that observation
//     already. A start reports Starting (or Connecting) when asked for,
//     again with its LastAttempt when it begins, then its outcome.
//   - What a server asks of its client (sampling/createMessage,
//     elicitation/create, roots/list) and what it logs reach the client
//     whose call raised it and no other (clientrequests.go, lanes.go). A
//     call carrying its client (package peer) runs on that client's own
//     session with the server, a lane, when the server's ClientSessions
//     wants one (SetClientSessions: auto gives a remote server's clients
//     that offered sampling, elicitation or roots a lane; per-client gives
//     every client one, a process each for a stdio server; shared none).
//     A lane offers the server exactly what its client offered. The shared
//     session offers nothing, and a request on it is refused to the server
//     with an error saying why; it is never guessed. A 2026-07-28 server's
//     input requests (an input-required result of a tool call, prompt or
//     resource read) take the same way (inputrequests.go): musterd asks
//     the lane's client, as classic requests, and calls again with the
//     answers and the server's requestState; on the shared session, or
//     for what the client did not offer, the call fails with a JSON-RPC
//     error saying why. A call whose client takes input-required results
//     itself (peer.Relays: a client of 2026-07-28) is not fulfilled: the
//     server's input-required result of its tool call, prompt or resource
//     read is the call's result, its retry's answers and state
//     (peer.Round) go back to the server, and, on a session of
//     2026-07-28, the server's request carries that client's own
//     capabilities of the request (peer.RelayedCapabilities) in its
//     _meta, in place of the session's, so the server asks only for what
//     the client can give (calls.go relayedMeta); a session of 2025-11-25
//     keeps those it declared in initialize. The logging level a lane's client (or, shared, the
//     most verbose listener) set travels in each request's _meta there.
//   - A lane's server is answered at once when its client goes away or the
//     lane ends (on a stop or a crash, once the lane's calls, cancelled,
//     have returned, so that they fail as stopped), and the lane closes
//     only after those answers and its calls' cancellations are out. A lane ends with its client's session,
//     after LaneIdle without a call, or with the shared instance (its
//     pending calls fail with ErrStopped); it is never restarted and never
//     changes what Get observes. At most MaxLanesPerServer are open per
//     server.
//   - A client that takes input-required results itself (peer.Relays: one
//     of 2026-07-28) gets a 2026-07-28 server's as they are. A 2025-11-25
//     server's requests during its tool call, prompts/get or
//     resources/read are bridged (bridge.go): the
//     call runs on a lane of its own, offering what the client's request
//     declared, and each request of the server's parks the call and ends
//     the client's request with an input-required result asking the same;
//     the retry (peer.Round, its state naming the parked call, that call's
//     latest round only) delivers the answers. A parked call is bounded by
//     the server's spec.timeout from its first request; then the server's
//     question is answered with an error and a late retry told the call
//     ended. A client's per-request _meta about itself (protocol version,
//     client info, capabilities) is never passed on as the server's own.
//
// Platforms: the above is Unix (group_unix.go, sysproc_*.go). On Windows
// (group_windows.go) a stdio server starts suspended and runs only once it
// is in a job object of its own, which holds every process it starts and
// kills them all when its handle closes (JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE):
// if musterd dies, its servers die with it, grandchildren included, with no
// setsid-like escape. Windows has no SIGTERM a console-less process can
// catch, so stopping a server closes its stdin and gives it StopGrace to
// exit, then terminates the job; a crash, kill or Stop ends the whole job as
// SIGKILL ends the Unix group. Exit descriptions name exit codes only
// (there are no signals to name).
package supervisor
