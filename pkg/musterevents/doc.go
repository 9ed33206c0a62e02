// Package musterevents is muster's view of musterd's events: it
// translates the pipeline's events (ResourceChanged, ResourceSynced,
// WorkflowExecutionFinished, …) into muster's catalogue of domain events
// (MCPServerCreated, MCPServerStarted, WorkflowCreated,
// WorkflowStepCompleted, …) with muster's reasons, Normal/Warning types and
// message texts, for muster's clients: core_events, `muster events`, and
// the Kubernetes Events.
//
// Place in the pipeline: an observer of the bus, beside the history. The
// pipeline's own events stay as they are, on the bus, the HTTP API and
// `musterd events`; this is the one place that tells them in muster's
// words. The Translator is plain code (no bus); the Log subscribes.
//
//	watchers, coordinator, workflow engine, core tools ──events──▶ Log ──muster events──▶ core_events (mcpserve)
//
// Guarantees:
//
//   - The translation (Translator.Translate), by musterd event:
//     ResourceChanged of a definition (from the filesystem or Kubernetes)
//     → MCPServerCreated/Updated/Deleted or WorkflowCreated/Updated (with
//     the step count)/Deleted, or MCPServerFailed / WorkflowValidationFailed
//     (with the error) when what was written is not usable; the
//     definitions found at start are not changes and are not told.
//     ResourceSynced and ResourceFailed of an MCPServer → its lifecycle, by
//     the transitions of its observed status: MCPServerStarting (and
//     MCPServerRestarting after a stop or failure), MCPServerStarted with
//     MCPServerToolsDiscovered, MCPServerStopped, MCPServerFailed,
//     MCPServerHealthCheckFailed (a remote server disconnected with an
//     error), MCPServerAuthRequired, and MCPServerToolsUnavailable when a
//     server that served its tools stops doing so; each once per
//     transition. A remote server's Connecting is an attempt whose outcome
//     tells: a reconnect that fails again tells nothing new. DefinitionValidated of a Workflow →
//     WorkflowValidationSucceeded or WorkflowValidationFailed.
//     WorkflowExecutionStarted → WorkflowExecutionStarted;
//     WorkflowExecutionFinished → WorkflowExecutionTracked, then
//     WorkflowExecutionCompleted (steps, duration) or
//     WorkflowExecutionFailed (error). WorkflowStepStarted →
//     WorkflowStepConditionEvaluated (when it had a condition) and
//     WorkflowStepStarted; WorkflowStepFinished → WorkflowStepCompleted,
//     WorkflowStepFailed (error, allow_failure) or
//     WorkflowStepConditionEvaluated and WorkflowStepSkipped. The
//     pipeline's bookkeeping (IndexSynchronized, ReconciliationTriggered,
//     ReconciliationStarted, StatusSynced, StatusSyncFailed,
//     ServiceStateChanged, BecameLeader, LostLeadership, ToolCallsCounted, a workflow's
//     ResourceSynced and ResourceFailed) has no muster counterpart and is
//     not told.
//   - Messages are muster's templates' texts, word for word (Message);
//     the type is muster's (Severity: Warning for the failures). Errors
//     pass through pkg/redact.
//   - The Log keeps the latest LogOptions.Limit events (10 000) in memory,
//     over all resources, translated as they were published (so a
//     WorkflowCreated keeps its step count after the workflow is gone).
//     Query lists them newest first, as muster does, filtered by kind,
//     name, namespace, type and time, at most limit; it first waits (at
//     most CatchUp) for the events published before it to be translated.
//     Follow streams the events recorded after it, each follower on its
//     own goroutine and queue, a slow one losing its own events only.
//   - Its bus delivery is lossy (Capacity): a view never slows the
//     pipeline; what it drops is counted in musterd_bus_dropped_total.
package musterevents
