// Package mcpserver reconciles MCPServer resources: it makes the supervisor
// run what the index declares.
//
// Place in the pipeline: called by the coordinator for keys of kind
// MCPServer; reads the desired state from the resources index and acts on
// the actual state through the supervisor. Like every reconciler it never
// imports the bus: the supervisor's changes reach the bus through the
// runtime bridge (package watchers/supervised), whose ServiceStateChanged
// brings the key back here.
//
// Guarantees:
//
//   - Declared with autoStart: the server runs the definition in force
//     (supervisor.Ensure): started if it is not running, restarted if a
//     field that matters changed (type, command, args, env, url, headers,
//     timeout, toolPrefix, or the annotation musterd.io/protocol-version),
//     left alone otherwise (a new description restarts nothing, nor does
//     musterd.io/client-sessions, which applies to the next client's
//     session). An annotation whose value musterd does not know is a
//     warning in the status, and its default applies.
//   - A reconcile never waits for a start: it asks the supervisor, which
//     starts the server on its own goroutines, and records Starting or
//     Connecting. The outcome (Running or Connected, or Failed) comes back
//     as a ServiceStateChanged through the runtime bridge, whose reconcile
//     records it, as a crash does. So a reconcile takes milliseconds
//     whatever the servers do, and slow starts hold no coordinator worker.
//   - Declared with autoStart false: nothing runs; the status is Stopped
//     (Disconnected for a remote server).
//   - An operator's override (SetOverrides; package services keeps them)
//     is honoured on every reconcile: a stop keeps the server stopped
//     whatever its autoStart, with Ready's reason StoppedByOperator and the
//     operator's reason in its message; a start runs a server whose
//     autoStart is false; a restart stops the server (forgetting its
//     failure streak and backoff: no crash) and starts it afresh, once per
//     request. An override ends with a change of the definition or its
//     deletion.
//   - The exposure policy (annotation musterd.io/exposure,
//     catalogue.ParseExposure) is beside the spec: parsed on every
//     reconcile and applied before a start (through SetExposer, the runtime
//     bridge), so a change of it restarts nothing. A policy that does not
//     parse, or that renames a tool of the running server onto another's
//     name, leaves the last good one in force (none: nothing of the server
//     is exposed) and is the reconcile's permanent error and a status
//     warning, naming the file and field. Status tools and toolCount are
//     the names exposed now (the policy's, less conflicts); the names a
//     server shares with another are warnings, and the Ready message says
//     "serving N of its M tools" when they differ.
//   - Not declared: the server is stopped (SIGTERM to its process group,
//     SIGKILL after the grace) and forgotten, and the result is Deleted.
//     List reports the declared keys and every key the supervisor knows,
//     so the resync prunes a server whose definition is gone.
//   - An invalid edit never stops a running server: the last good
//     definition stays in force and keeps running, and the reconcile fails
//     with the file's error (permanent, naming file, line and field) so the
//     reconcile state shows it.
//   - A server in its restart backoff is reconciled again exactly when the
//     backoff allows a start (reconcilers.RetryAt at the supervisor's
//     NextRetryAfter), never earlier, so the supervisor's per-server
//     exponential backoff with jitter, capped at minutes, paces every
//     restart, for as long as the server keeps failing: the coordinator
//     does not give up on it after MaxRetries.
//   - Status (v1alpha1.MCPServerStatus, through Status) is the supervisor's
//     observation at the last reconcile: state, the exposed names of the
//     tools and their count, restartCount (restarts of a process that
//     ran), consecutiveFailures (failed starts, crashes, failed pings,
//     dropped or refused connections), lastError (why it is down now, for
//     a crash the exit code and stderr tail; empty while Running or
//     Connected), lastFailure and lastFailureTime (the last failure, kept
//     after recovery), lastAttempt, nextRetryAfter, observedGeneration,
//     warnings (the fields of the file musterd ignored,
//     resources.Entry.Warnings) and a Ready condition; and lastConnected, the last successful
//     initialize, ping or call, read from the supervisor when Status is
//     asked, as pings refresh it without a reconcile. It never holds an env value or a header: the spec's
//     secrets are not copied into it, and the supervisor scrubs every
//     message of them.
package mcpserver
