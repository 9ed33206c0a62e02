// Package events is the catalogue of everything that travels on musterd's
// bus.
//
// Place in the pipeline: it is the leaf. Every other package may import it;
// it imports nothing of musterd's.
//
//	watchers ──ResourceChanged / IndexSynchronized──▶ debouncer
//	debouncer ──ReconciliationTriggered──▶ coordinator
//	coordinator ──ReconciliationStarted / ResourceSynced / ResourceFailed──▶ statusync, metrics
//	statusync ──StatusSynced / StatusSyncFailed──▶ observers
//	supervisors ──ServiceStateChanged──▶ debouncer
//	leader election ──BecameLeader / LostLeadership──▶ lifecycle
//	workflow engine ──WorkflowExecutionStarted / WorkflowExecutionFinished,
//	                  WorkflowStepStarted / WorkflowStepFinished──▶ observers
//	core tools ──DefinitionValidated──▶ observers
//	router ──ToolCallsCounted──▶ observers (the live page)
//
// Guarantees:
//
//   - One Go type per event, each with a stable type name (EventType) that
//     never changes once released: traces are recorded and replayed by it.
//   - Events are values. Every field is a value type or an immutable
//     container (see [TriggeredKeys]), so an event cannot be changed after it
//     is published, not even by a subscriber that receives it.
//   - Every event carries a [Meta]: a timestamp and a correlation ID. The
//     events of one chain (a change, its trigger, its reconcile, its Synced or
//     Failed, its status write) share the correlation ID of the change that
//     started it.
//   - Every event round-trips through JSON by [Marshal] and [Unmarshal]
//     without loss.
//   - A resource is named by a [Key] with one canonical spelling: the
//     namespace defaults to "default" wherever a Key is built or decoded.
package events
