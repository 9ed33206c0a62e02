// Package debouncer turns resource changes into reconciliation triggers,
// per resource key, with a leading edge and a refractory period.
//
// Place in the pipeline:
//
//	watchers ──ResourceChanged / IndexSynchronized──▶ debouncer ──ReconciliationTriggered──▶ coordinator
//	supervisors ──ServiceStateChanged──▶ debouncer
//
// Guarantees, each per key:
//
//   - Leading edge: the first change of a key after a quiet period triggers
//     at once, with no added delay (reason change, or service-state for a
//     ServiceStateChanged). The key then enters a refractory period of
//     Options.Interval.
//   - Refractory period: at least one Interval separates two triggers of a
//     key that come from changes. Changes inside the period are coalesced
//     and trigger once when it ends, which starts a new period: reason
//     refractory-end if any of them changed the definition, service-state
//     if all came from the running service, so that a crash is never taken
//     for a user's change (which resets a key's retry backoff). So a
//     service that crashes in a loop makes its key reconcile at most once
//     per Interval, and never faster than its backoff: what stops restart
//     storms.
//   - Nothing is lost: every change is followed by a trigger of its key
//     within one Interval.
//   - A manual change (Source manual) triggers at once even inside a
//     refractory period; it covers any change of the key that was pending
//     and restarts the period.
//   - Hold until synced: changes seen by the filesystem or Kubernetes
//     watcher before that watcher's IndexSynchronized are held, and fire
//     together as one trigger (reason index-synced) when it arrives. That
//     trigger is published even when nothing was held: the coordinator takes
//     it as the signal for a full pass. The first reconcile must see the
//     complete listing, because a key missing from an incomplete listing
//     looks deleted; muster once took every custom resource for deleted
//     that way.
//   - Correlation: each triggered key carries the correlation ID of the
//     newest change folded into it. A trigger's own correlation ID is that
//     of its first key (or, for an empty index-synced trigger, that of the
//     IndexSynchronized), never a fresh random one, so replaying a trace
//     yields byte-identical triggers.
//   - Batching: keys that fire at once while the debouncer drains its
//     mailbox are published together when the mailbox is empty, one
//     ReconciliationTriggered per reason; at most 1024 keys wait for that,
//     so a debouncer that never catches up still publishes. Keys whose
//     refractory periods end at the same instant share one trigger.
//   - Flat cost: there is no goroutine and no timer per key. One timer
//     serves a queue of refractory deadlines, in the order the periods
//     began (which, every period lasting one Interval, is the order they
//     end), and a key is forgotten as soon as its refractory period ends
//     with nothing pending, so idle keys cost no memory. A key in its
//     period is a small handle (events.Interner) indexing one record; the
//     queue moves handles. The tables a burst grew are kept for the next
//     fill of a stream, and let go once no key has been in a period for
//     10 s.
//   - Time comes from [Options].Clock (default the real clock), which a
//     replay outside synctest steps; [Debouncer.Quiescent] says whether a
//     refractory end (or the release of a burst's tables) is due and when
//     the next one is.
package debouncer
