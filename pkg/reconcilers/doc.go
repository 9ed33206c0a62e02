// Package reconcilers defines what a resource reconciler is and keeps the
// registry of them, one per kind.
//
// Place in the pipeline: the coordinator calls reconcilers; reconcilers call
// nothing of the pipeline. They are plain code over desired and actual state
// and never import the bus, so they can be tested, and replayed, alone.
//
// Contract for a Reconciler:
//
//   - Reconcile is level-triggered and idempotent: it reads the desired state
//     of one key fresh, compares it with what actually runs, and acts on the
//     difference. Whatever event led to the call, the same state gives the
//     same outcome.
//   - The coordinator never calls Reconcile for one key from two goroutines
//     at once; calls for different keys may overlap.
//   - Reconcile honours ctx: the coordinator gives each call a deadline.
//   - An error wrapped with Permanent is not retried; any other error is
//     retried with backoff, or at the time RetryAt names, when the
//     reconciler knows better (a server's own restart backoff).
//   - List returns every key the reconciler knows of, desired or actually
//     running, so that the periodic resync reaches orphans too.
package reconcilers
