// Package kubeevents records Kubernetes Events on the MCPServer and
// Workflow custom resources in Kubernetes mode: what musterd did to each
// resource, for `kubectl describe` and `kubectl events`, as the users of
// controller-runtime's controllers expect.
//
// Place in the pipeline: an observer of the bus, after the coordinator,
// registered leader-only: only the replica that reconciles says what it
// did. The reconcilers stay Kubernetes-agnostic and never see it.
//
//	coordinator ──ResourceSynced / ResourceFailed──▶ kube-events ──events.k8s.io/v1 Events──▶ API server
//	workflow engine, core tools ──runs, steps, validations──▶ kube-events
//
// The servers' lifecycle and the workflows' runs, steps and validations
// are told in muster's words, by the same translation as core_events
// (package musterevents): MCPServerStarted, WorkflowStepFailed, …
//
// It records through client-go's events.k8s.io broadcaster (the
// EventRecorder controller-runtime's manager hands out), which aggregates
// repeats of one event into a series instead of creating a new Event each
// time. Events are reported by controller Options.ReportingController
// (default "musterd"); client-go names the instance <controller>-<hostname>.
//
// Guarantees:
//
//   - Normal Synced once per generation: when a reconcile succeeds and the
//     reconciler observed a generation this recorder has not recorded yet.
//     A resync, a status-only update or a retry that changes nothing
//     records nothing. At start (on election) it lists the resources and
//     takes each status's observedGeneration as recorded, so a new leader
//     does not repeat the previous leader's Synced events.
//   - Warning ReconcileFailed on every failed reconcile, with its error
//     (the broadcaster folds repeats of one error into a series).
//   - Warning InvalidDefinition when a resource's current generation fails
//     validation, once per distinct error; the last good definition stays
//     in force, which no Synced claims otherwise.
//   - An MCPServer's lifecycle in muster's reasons, one Event per
//     transition of its observed status, whether or not the reconcile
//     succeeded (a server in its backoff fails its reconcile):
//     MCPServerStarting (and MCPServerRestarting), MCPServerStarted with
//     MCPServerToolsDiscovered (Running or Connected; a new leader starts
//     its servers itself, so it tells their start), MCPServerFailed and
//     MCPServerHealthCheckFailed (Warnings, with the error's first line),
//     MCPServerToolsUnavailable, MCPServerStopped, MCPServerAuthRequired.
//     A remote server's reconnect that fails again tells nothing new.
//   - A Workflow's runs, steps and validations on request, in muster's
//     reasons (WorkflowExecutionStarted/Tracked/Completed/Failed,
//     WorkflowStepStarted/Completed/Failed/Skipped,
//     WorkflowValidationSucceeded/Failed), each an Event, from a lossy
//     subscription of their own (1024 pending): a burst past it loses
//     Events, counted by the bus, and never slows a run.
//   - No secret in an Event: every note passes pkg/redact, and is cut to
//     the API's 1 KiB.
//   - Best effort, never in the way: an Event whose object cannot be read
//     (gone, or the API server down) is logged at debug level and dropped;
//     one the API server cannot take is retried by the broadcaster (12
//     tries, 10 s apart), then dropped with client-go's error log.
//     Reconciling and status writing go on regardless; a read is bounded by
//     Options.RequestTimeout.
//   - RBAC: create and patch on events.k8s.io events (patch for series),
//     list on the two kinds for the start; config/rbac grants exactly that.
package kubeevents
