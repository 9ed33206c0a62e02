// Package coordinator runs reconcilers for the keys that reconciliation
// triggers name.
//
// Place in the pipeline:
//
//	debouncer ──ReconciliationTriggered──▶ coordinator ──Reconcile──▶ reconcilers
//	coordinator ──ReconciliationStarted / ResourceSynced / ResourceFailed──▶ statusync, metrics
//
// It imports events, bus and reconcilers. A key is interned once, when its
// trigger arrives (events.Interner): from then on the workqueue, the delay
// heap and the workers pass its small handle, and everything the
// coordinator knows of the key (triggers, queue membership, delay,
// backoff streak, tombstone) is one record in a table indexed by it
// (events.Records, pages that never move as the table grows). A
// record is kept while its resource exists as far as its last reconcile
// knows, so memory is bounded by the resources and the keys with work
// pending; it and its handle go once a reconcile reports the resource
// deleted, a resync prunes its tombstone or its kind is disabled, and
// never while the workqueue or a worker holds the handle. Handles travel through a
// keyqueue.Queue: client-go's workqueue rules (fair, stingy, one worker per
// item, dirty requeue) and metrics, exported through
// [Options].MetricsProvider, over records indexed by handle instead of
// client-go's maps keyed by item (pkg/keyqueue says why). Retries and requeues are timed by one
// timer on the coordinator's clock, armed before the reconcile that asks
// for them counts as done, rather than by the workqueue's delaying queue,
// whose goroutine arms its timer later on its own: a replay stepping a fake
// clock between the two had that timer set past the retry (see
// [Coordinator.Quiescent]).
//
// One file per mechanism: coordinator.go (options, workers, claim),
// records.go (the records and their handles), triggers.go (what a trigger
// may do), retries.go (outcomes, backoff and the delay heap), resync.go
// (resync passes), quiescent.go (for a stepped replay).
//
// Guarantees:
//
//   - Keys are canonical everywhere: "" and "default" name one namespace.
//   - A key queued many times before a worker takes it is reconciled once.
//     A key is never reconciled by two workers at once; a trigger that
//     arrives while it is being reconciled makes it run once more afterwards.
//   - Pending triggers fold into one set per reason (events.TriggerMerger,
//     amortised O(1) per key), so memory is bounded by the number of keys
//     and no key is lost.
//   - Every Reconcile runs under a deadline (ReconcileTimeout) and a panic
//     in it is recovered, counted and retried like an error.
//   - A failing key is retried with per-key exponential backoff and jitter,
//     at most MaxRetries times; ResourceFailed.NextRetry says exactly when.
//     Delays never exceed BackoffMax, and keep their jitter there (below
//     it), so keys that fail together never retry in lockstep.
//     An error made with reconcilers.RetryAt is retried at exactly the time
//     it names instead (never earlier, not capped by BackoffMax, at once if
//     that time has passed), and does not count against MaxRetries: the
//     dependency that names the time owns the schedule and its bound.
//     A permanent error (reconcilers.Permanent) is never retried. Only a
//     change (change, refractory-end, manual, index-synced) resets the
//     backoff; runtime events (service-state, retry, resync) never bypass
//     it, so a crash-looping service cannot make musterd restart it in a
//     tight loop.
//   - A key that failed for good (permanent error, or retries used up) stays
//     Failed until the next change, manual trigger or resync, which
//     reconcile it afresh from attempt 1; service-state and retry triggers
//     leave it alone. The tombstone that remembers this is dropped by a
//     successful reconcile, and by a resync pass once the key's kind no
//     longer lists it, is disabled or has no reconciler.
//   - A reconcile cut short because the coordinator stops is not a failure:
//     nothing is published for it and it is not observed. One that ran out
//     of ReconcileTimeout is a failure, stopping or not.
//   - Every finished reconcile is reported to [Options].Observer on the
//     worker that ran it, so reconcile metrics are exact.
//   - Errors and panic values are passed through redact.String before they
//     are published (ResourceFailed.Error) or logged.
//   - A retry or requeue superseded by a newer reconcile is dropped when it
//     comes due: a reconcile is level-triggered, so it answers every wakeup
//     that was pending when it started.
//   - The only periodic work is one resync ticker for the whole coordinator:
//     every ResyncPeriod, each enabled kind's List (desired and actually
//     running keys, so orphans are pruned) is enqueued, paced by ResyncQPS
//     so that real changes are not starved. Passes never overlap; requests
//     that arrive during a pass coalesce into at most one more. An
//     index-synced trigger starts a pass too, which skips the trigger's own
//     keys: enqueued from the complete listing a moment before, they need
//     no second reconcile. ReconcileAll, for a newly elected leader, starts
//     a pass that enqueues every listed key at once, unpaced: the leader
//     has reconciled nothing yet, so it must not take 100 s for 10,000
//     resources to begin.
//   - Published events carry the correlation ID of the newest trigger of
//     their key; retries keep it.
//   - Time, for event stamps, delays in the workqueue, the resync ticker
//     and its pacing, comes from [Options].Clock (default the real clock),
//     which a replay outside synctest steps. ReconcileTimeout and stall
//     reports stay on the real clock: they bound real work.
//     [Coordinator.Quiescent] says whether anything is due (a pending key,
//     a reconcile in flight, a resync pass, a retry or tick at that time)
//     and when the coordinator acts next on its own.
package coordinator
