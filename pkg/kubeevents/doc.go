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
//   - Normal ServerStarted when an MCPServer's reconcile finds its server
//     Running and it was not when this recorder last looked (a new leader
//     starts its servers itself); ServerRestarted instead when its restart
//     count grew since.
//   - Normal ServerConnected when a remote server is Connected, Warning
//     ServerDisconnected when its connection dropped (or a reconnect was
//     refused), Warning ServerFailed when a server failed (a crash, a
//     failed start, a ping unanswered), with the error's first line: one
//     Event per transition, whether or not the reconcile succeeded (a
//     server in its backoff fails its reconcile).
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
