// Package pipeline wires musterd's stages into one running whole: the bus,
// the debouncer, the coordinator with its reconcilers, the status store and
// the metrics subscriber, each a lifecycle component.
//
// Place in the pipeline: it is the wiring, beside lifecycle and cmd. It may
// import every stage; no stage imports it. The daemon, the end-to-end tests
// and users embedding musterd as a library build their pipeline here and
// add their own components (watchers, subscribers) with Add.
//
// Guarantees:
//
//   - Stages start in pipeline order, downstream first (Foundations, then
//     status store and metrics, then coordinator, then debouncer, then what
//     Add registers), and stop in reverse, so no stage's output is
//     published to a stage that has already stopped, and a foundation such
//     as a trace recorder sees every stage's last event.
//   - The bus's start barrier is released only once every stage has
//     subscribed: nothing published during start-up is lost.
//   - Under leader election (Options.Lifecycle.Elected set), the
//     coordinator, and with it every reconcile, is leader-only; the status
//     store, metrics and debouncer run on every replica, so a follower
//     keeps its index and statuses warm. Whoever elects this replica must
//     ask the coordinator for a full pass (Coordinator.Resync) on election:
//     the triggers published before it started reached nobody.
//   - Every core stage is critical: if one fails, Run stops the rest and
//     returns an error naming it.
//   - Metrics of every stage land in one Prometheus registry.
package pipeline
