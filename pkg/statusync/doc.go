// Package statusync holds the pipeline's two end subscribers: the status
// [Store], which turns reconcile events into per-resource statuses and writes
// them where users look for them, and the Prometheus [Metrics] subscriber.
//
// Place in the pipeline: the last stage. It imports events and bus; it
// subscribes to what the coordinator publishes and publishes StatusSynced /
// StatusSyncFailed, the end of every chain.
//
//	coordinator ──ResourceChanged / ReconciliationStarted / ResourceSynced / ResourceFailed──▶ Store ──StatusSynced / StatusSyncFailed──▶ observers
//	coordinator ──ObserveReconcile──▶ Metrics ◀──StatusSynced / StatusSyncFailed (lossy)── Store
//	Metrics, bus.Stats ──▶ Prometheus registry
//
// Guarantees of the Store:
//
//   - One coalescing subscription (by resource key) for all four event
//     types, so a key's events are applied in publish order and memory is
//     bounded by the number of keys; the newest state of every key wins.
//   - The in-memory status ([Store.Get], [Store.List]) is updated on the
//     subscriber goroutine at once. Writes to the [StatusWriter] run on a
//     separate goroutine fed by a work queue of resources (pkg/keyqueue:
//     client-go's workqueue rules over handles, events.Interner), so a slow
//     writer never delays the in-memory state, a key is never written by
//     two goroutines at once, and any number of changes made during one write
//     cause exactly one more write, of the newest state. With
//     [StoreOptions].HoldWrites, writes start only once it is closed (the
//     daemon's first full reconcile); each resource is then written once,
//     with its newest state.
//   - A failed write is retried per key with exponential backoff; changes
//     that arrive meanwhile, or during the write that failed, wait for that
//     retry, which writes the newest state. A write equal to the last
//     successful one is skipped.
//   - Every write outcome is published with the key's correlation ID:
//     StatusSynced (written, unchanged, deleted, or skipped: see
//     [ErrSkipped]) or StatusSyncFailed (with a category, see
//     [WithCategory], and a redacted error).
//   - Errors are passed through [redact.String] before they are stored, published
//     or logged. A key whose writes keep failing is logged at its first
//     failure and then at growing intervals, at most 5 minutes apart, not on
//     every attempt.
//   - Time, for event stamps and write retries, comes from
//     [StoreOptions].Clock (default the real clock); WriteTimeout stays on
//     the real clock. [Store.Quiescent] says whether a write is queued, in
//     progress or due for a retry, and when the next retry is.
//
// [History] keeps the latest events of the resources for `musterd describe`
// and core_events: at most Depth a resource and Limit in all, whatever is
// declared, and forgets a resource's with its deletion. It keeps no
// ToolCallsCounted: a busy server's calls would push its reconciles out. [Readiness] says
// when the first full reconcile is done (/readyz, and Done for HoldWrites).
//
// Guarantees of Metrics:
//
//   - Metric names follow controller-runtime's, prefixed musterd_.
//   - Reconcile metrics (musterd_reconcile_total, _errors_total,
//     _time_seconds) are counted at the source: Metrics is the
//     coordinator's Observer ([Metrics.ObserveReconcile]), so they are
//     exact under any load.
//   - Status-sync metrics come from a lossy subscription that never slows
//     the pipeline; what it drops is counted by the bus and exported with
//     the bus stats (musterd_bus_dropped_total).
//   - Bus counters are read from [bus.Bus.Stats] at scrape time, so they are
//     exact even when the metrics subscriber drops events.
package statusync
