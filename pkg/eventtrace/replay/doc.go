// Package replay runs a recorded event trace through musterd's pipeline
// stages under testing/synctest virtual time, for this project's tests and
// for tests of users' own components, and compares what the stages emit
// with a golden file.
//
// Place in the pipeline: it is wiring, like pkg/pipeline: it builds the
// chosen stages (debouncer, coordinator with reconcilers, status store, a
// user's own components) with the lifecycle registry, feeds them the
// trace's input events and collects what they publish. No stage imports it.
//
// How a replay is sequenced. Each stage runs on a bus of its own, and the
// replay relays every event between the buses one at a time: it publishes
// the event on every bus, waits (synctest.Wait) until every goroutine of
// the bubble is blocked, collects what each stage emitted meanwhile, and
// relays those the same way, stage by stage in a fixed order. Virtual time
// stands still during all this; it moves on only when nothing is left to
// relay, to the next recorded input or to the next instant a stage's own
// timer fires (the debouncer's refractory end, a retry, a resync). So every
// event is handled by every stage before the next is seen, and the order of
// the output never depends on how the Go scheduler interleaves the stages'
// goroutines.
//
// Guarantees:
//
//   - Determinism: the same trace and options with the same code give
//     byte-identical output every time, race detector on or off. The
//     sequencing above orders the stages; within a stage, the coordinator
//     runs one worker (with two, which worker takes which key, and so the
//     order of their events, is up to the scheduler), its jitter comes from
//     a fixed-seed generator, the chains it starts (resync passes) take IDs
//     from a counter ("replay-000001", …), inputs keep their recorded IDs,
//     and event times are those of the bubble, whose clock starts at
//     2000-01-01 00:00:00 UTC.
//   - Inputs at their recorded offsets: ResourceChanged (every source,
//     manual included), IndexSynchronized, ServiceStateChanged and the
//     leadership events, and the recorded events of any catalogue stage not
//     run (the recorded triggers when the debouncer is not run, say), with
//     their times moved to the replay's clock. Event types that are not in
//     the catalogue are never fed: a user's component emits its own. Nor
//     are the events no stage reads or emits (the workflow runs', a
//     DefinitionValidated, the router's ToolCallsCounted): they are
//     recorded, and a replay is the same with or without them.
//   - The output holds exactly the events the stages emitted, in the order
//     they were relayed, each at the virtual offset it was published.
//   - Recorded outcomes: with the coordinator and no reconcilers given, each
//     key's reconciles return, in order, the outcomes the recording holds for
//     it (see [Options].Reconcilers), so that the replay yields the
//     recorded sequence of Synced and Failed outcomes per resource.
//   - Every goroutine a replay starts has ended when Replay returns.
//
// Outside a bubble, [ReplayStepped] sequences the same replay on a fake
// clock (k8s.io/utils/clock) that it steps itself, as musterd replay does:
// where Replay waits with synctest.Wait, it waits until the stages are
// quiescent (every bus idle with its Progress unchanged across the check,
// and the debouncer, the coordinator and the status store reporting
// nothing due), and it moves the clock to the next recorded input or the
// next instant a stage said it would act. Its output is byte for byte
// Replay's: the clock starts at the bubble's epoch, and the sequencing is
// the same code. A user's component is seen only through its bus
// subscriptions there, so one with goroutines or timers of its own needs
// Replay. Stages that are not quiescent within [Options].SettleTimeout of
// real time fail the replay with an error naming what is busy, instead of
// hanging it.
//
// Reconciles take no virtual time: a replay is about the pipeline's event
// logic (debouncing, retries, resyncs, ordering), not the speed of the
// machine the trace was recorded on.
package replay
