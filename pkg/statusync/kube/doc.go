// Package kube is the status writer of Kubernetes mode: it writes each
// MCPServer's and Workflow's status to its custom resource's status
// subresource. It implements statusync.StatusWriter, as package files does
// for filesystem mode.
//
// Place in the pipeline: behind the status store, which calls it from its
// write queue (one goroutine, never one key twice at once, failed writes
// retried per key with exponential backoff and logged with backoff, not on
// every attempt).
//
//	statusync.Store ──WriteStatus──▶ Writer ──GET, PUT …/status──▶ API server
//
// Guarantees:
//
//   - Only the leader writes: until Options.Elected is closed, WriteStatus
//     returns statusync.ErrSkipped, which the store reports as StatusSynced
//     with category skipped (never written) and does not take as written;
//     the leader's full pass on election writes every status.
//   - What is written is the reconciler's own status in the v1alpha1
//     schema (state, tools, toolCount, lastError; valid, missingTools,
//     stepCount …), with its Ready condition and observedGeneration: the
//     generation of the spec that was reconciled, so observedGeneration <
//     metadata.generation says a newer spec awaits its reconcile. A
//     definition that fails validation is shown as such (Ready False,
//     reason InvalidDefinition, lastError naming the fields) with the
//     generation that was rejected.
//   - A conflict is retried by re-reading the object
//     (client-go's retry.RetryOnConflict, its DefaultRetry: 5 attempts);
//     the status is recomputed against the fresh object, so the write
//     carries its newest resourceVersion and generation. The status is
//     musterd's: another writer's change to it is replaced.
//   - Nothing changed, nothing written: a status equal to the one the
//     object carries is not written, so the store's repeated states, a
//     resync, and a new leader's pass cost a GET each, not a write.
//   - A resource that is gone is not an error: its status went with it.
//     DeleteStatus writes nothing.
//   - Every failure carries a category for metrics and logs (see
//     [Category]): conflict_after_retries, crd_not_found,
//     api_server_unreachable, timeout, permission_denied,
//     authentication_failed or other.
package kube
