// Package keyqueue is the work queue of the coordinator and the status
// store: client-go's workqueue (k8s.io/client-go/util/workqueue), its
// rules and its metrics, for items that are small handles
// (events.Handle) rather than comparable values of any size.
//
// Place in the pipeline: beside events, below the stages that queue keys.
// It imports only events, and internal/ring, its ring of handles.
//
// Why not client-go's own queue with handles as items: it keeps four maps
// keyed by item (dirty, processing, and its metrics' add and start times),
// each as large as the backlog. A burst of 100,000 keys makes every Add
// and Get probe maps of 100,000 entries, a cache miss each: in the
// coordinator's queue and the status store's, those probes would be a
// large share of the pipeline's CPU. Here the same state
// is a byte per handle, in a slice indexed by it and kept for the queue's
// life (a byte per resource: the owners' handles are dense), and the
// queue itself is a ring of handles (internal/ring, shared with the
// debouncer's deadlines); the two timestamps of the metrics live with the
// few handles queued or busy, in the ring and the busy list. The ring a
// burst grew is dropped once a small fill empties the queue again, or,
// with metrics, after 10 s empty with no Add (a daemon at rest makes no
// small fill).
//
// Guarantees, each the client-go queue's and each pinned by a test:
//
//   - Fair: handles come out in the order they were first added.
//   - Stingy: a handle added many times before a worker takes it comes out
//     once.
//   - One worker per handle: a handle being processed (taken by Get, not
//     yet Done) is not handed out again.
//   - Dirty requeue: a handle added while it is processed comes out once
//     more after its Done.
//   - ShutDown makes Add a no-op; Get still hands out what is queued, then
//     reports shutdown.
//   - Metrics: given a workqueue.MetricsProvider, the queue reports depth,
//     adds, queue latency, work duration, unfinished work and the longest
//     running processor under its name, as client-go's does, the last two
//     refreshed every 500 ms on the queue's clock.
//
// Every call answers as client-go's queue does, on the same sequence of
// calls (a model test drives both), but for one on purpose: Done of a
// handle that is queued and not being processed (a caller's bug, since
// Done belongs to a Get) does nothing here, where client-go's queue queues
// the item a second time, to be handed out twice, breaking its own "once"
// and "one worker" rules.
package keyqueue
