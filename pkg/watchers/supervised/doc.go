// Package supervised bridges what actually runs to reconciliation: it turns
// the supervisor's observations into bus events and keeps the tool
// catalogue true to the servers that run.
//
// Place in the pipeline: a watcher, like the filesystem one, but of the
// runtime rather than of definitions.
//
//	supervisor ──OnChangeSync──▶ Bridge ─┬─▶ catalogue (Update / Remove), at once
//	                                     ├──ServiceStateChanged──▶ debouncer   (the MCPServer)
//	                                     └──ResourceChanged──────▶ debouncer   (each Workflow naming a changed tool)
//
// Bridge guarantees:
//
//   - The catalogue is written in OnChange itself, which the supervisor
//     calls under its lock (Options.OnChangeSync): when Ensure returns a
//     server Running, its tools are in the catalogue, so the MCPServer
//     status never names a tool that Workflows, validated against the
//     catalogue, would not find.
//   - OnChange never blocks the supervisor on the bus: what must be
//     published is queued, in order, and published one change at a time by
//     Start's goroutine.
//   - The catalogue holds the tools of exactly the servers that run
//     (Running or Connected): a server's tools, with their definitions,
//     naming (toolPrefix, family) and listing time, are set on every change
//     while it runs, and removed on any other state, but one: a server the
//     supervisor is replacing for a changed spec (Observed.Replacing, not
//     Failed) keeps its tools offered between the stop of its old instance
//     and the start of the new one, so that a call made meanwhile waits for
//     the new instance (supervisor.Options.CallWait) rather than failing as
//     an unknown tool, and clients see no list_changed for a restart that
//     changes no tool. The new instance's listing replaces them; its
//     failure removes them.
//   - A change that needs the server reconciled is published as a
//     ServiceStateChanged with its state, previous state and error: the
//     outcome of a start, Running or Connected or Failed or Auth Required
//     (a remote server that answered 401), which the reconcile that asked
//     for it did not wait for: a start runs on the supervisor's
//     goroutines; a server that went down by itself (a crash, a failed
//     ping, a closed connection: the supervisor's failures, which arm its
//     backoff), and a running server whose tools changed or whose failure
//     streak cleared, so that its status catches up. The transient
//     Starting and Connecting, which the reconcile that asked for the start
//     recorded itself, and a stop it asked for, are not published.
//   - The catalogue knows which servers are starting (SetStarting), so a
//     Workflow naming a tool of one is reported waiting for it rather than
//     invalid. When a server begins or ends a start, every Workflow naming
//     a tool under its name prefix is published as a ResourceChanged too:
//     valid the moment its tools arrive, invalid once the start failed.
//   - When the catalogue changes, every declared Workflow whose definition
//     in force needs an affected tool, itself or through the workflows it
//     calls at any depth (workflow.Needed), is published as a ResourceChanged
//     (Source service-state, Operation update), so it is validated again
//     through the pipeline, with no polling. The events of one change share
//     a correlation ID.
//   - SetExposure (the MCPServer reconciler's, for the annotation
//     musterd.io/exposure) applies a server's exposure policy to the
//     catalogue at once, running or not, and publishes every Workflow
//     needing a tool whose answer changed, as above: nothing restarts.
//   - A server whose conflicts changed (catalogue.Change.Conflicts: a name
//     it shares with another server, begun or ended by a change of either)
//     is published as a ResourceChanged, so that its status says so; both
//     servers of a conflict are.
//
// The Stopper is the supervisor's lifecycle component: its Start waits for
// the end of its context and then shuts the supervisor down, so that no
// server musterd started outlives it.
package supervised
