// Package services keeps the operator's start, stop and restart requests
// for declared MCP servers: overrides that the MCPServer reconciler
// consults on every reconcile (mcpserver.Overrides), so that what the
// operator asked holds through reconciliation rather than around it.
//
// Place in the pipeline: beside the reconcilers, as their input, like the
// index. It never starts or stops anything itself: a request is recorded
// here, then reconciled by the coordinator like any change.
//
// Guarantees:
//
//   - A stop holds until a start, a change of the server's definition (its
//     content hash, as the index holds it) or its deletion, whatever
//     happens meanwhile: resyncs, crashes of leftovers, runtime events and
//     restarts of musterd, since the overrides are persisted (Persister:
//     File in the state directory in filesystem mode, CRStatus in the
//     MCPServer's status.override in Kubernetes mode) before the request is
//     answered.
//   - A start ends a stop; on a server whose autoStart is false it runs the
//     server until a stop, a change or a deletion.
//   - A restart is carried out once per request: the reconciler stops the
//     server, which forgets its failure streak and backoff, and starts it
//     afresh. A restart is not persisted: musterd's own restart starts
//     every server afresh anyway.
//   - Overrides of a changed or deleted definition are dropped, and the
//     drop persisted, the first time the reconciler asks.
package services
