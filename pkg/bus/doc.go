// Package bus is musterd's typed in-process event bus.
//
// Place in the pipeline: every stage publishes and subscribes through it. It
// imports only package events. It is built on
// github.com/asaskevich/EventBus, which never shows through its API: callers
// use the generic [Publish] and [Subscribe], or [Bus.Subscribe] with [On]
// handlers, and never see reflection.
//
// Guarantees:
//
//   - Each [Subscription] owns one goroutine and one mailbox. Its handlers run
//     there, in publish order, never on the publisher's goroutine and never
//     under a bus lock, so a handler may publish.
//   - Publishing never blocks on a subscriber. A slow subscriber delays only
//     itself.
//   - Nothing is dropped silently. A subscription declares its [Delivery]:
//     [Coalescing] (a newer event for a key replaces, or merges into, the
//     pending one; memory is bounded by the number of keys and the newest
//     state of every key is delivered; [Delivery.Lazy] defers that until n
//     events wait, bounding memory by the keys plus n) or [Lossy] (at most a bound of pending
//     events; the excess is dropped and counted per subscriber and event
//     type in [Bus.Stats]) or [Unbounded] (every event, in publish order,
//     with memory growing while the subscriber lags: for the few that must
//     see everything, such as the trace recorder).
//   - A start barrier: events published before [Bus.Start] are held and then
//     delivered in publish order, so components that subscribe during start
//     up miss nothing.
//   - A panicking handler is recovered, counted and logged; its subscription
//     keeps running.
//   - [Subscription.Unsubscribe] removes exactly that subscription,
//     discarding what is pending; [Subscription.Drain] removes it once it
//     has handled every event published before the call.
//   - Quiescence: [Bus.Idle] reports that every live subscription has
//     handled every event put into its mailbox and run the OnIdle after
//     them; [Bus.Progress] moves with every put and every handled batch, so
//     a caller that drives all publishers itself (a replay stepping a fake
//     clock) can tell that the bus and its stages were idle all at once.
//
// How EventBus is used, plainly: no longer on the hot path. Each Go event
// type is one EventBus topic whose only handler is the bus's dispatcher,
// which copies an event into the mailbox of every subscription of the
// type; but Publish finds that dispatcher in the bus's own map of topics
// and calls it directly, under the bus's own mutex, rather than through
// EventBus.Publish. EventBus.Publish serialises publishes under its global
// mutex too, but then copies the topic's handler slice and calls the
// dispatcher by reflect.Call on every event, which costs a large share of
// a publish's CPU and most of its allocations: through it a publish costs
// several times a channel send, against about 1.5 times without (make
// bench's bus_publish_ns beside chan_send_ns). The one mutex keeps what
// EventBus's lock gave:
// concurrent publishes reach every subscription in one order. So EventBus
// only holds the dispatchers, and no behaviour depends on it; it stays
// because the project chose it, and going back to EventBus.Publish is a
// one-line change in dispatch, at that cost.
//
// What runs on the publisher's goroutine: the dispatcher, under that mutex,
// calling each subscription's coalescing key function and, for merging
// deliveries, Merger.Add. Those must therefore be quick, must not block and
// must not publish; everything else (handlers, OnIdle, Merger.Result) runs
// on the subscription's own goroutine.
//
// EventBus's known defects are designed out, each pinned by a test:
//
//   - It holds its global lock while a synchronous handler runs, so a handler
//     that publishes deadlocks. Here the only code run under a publish lock
//     is the dispatcher that copies the event into mailboxes; user handlers
//     run on their own goroutines.
//   - Unsubscribe matches handlers by code pointer, so two closures made by
//     one function literal are confused. Here EventBus only ever holds one
//     dispatcher per topic, which is never unsubscribed; subscriptions are
//     tracked by their handle.
//   - SubscribeOnce removes handlers by an index into a stale copy. Here
//     [SubscriberOptions].Once is a flag on the subscription, claimed
//     atomically.
//   - An argument of the wrong type panics inside reflect. Here a topic is a
//     Go type, not a name, so an event reaches only handlers of its own type
//     (or the events.Event wildcard), whatever its EventType says.
package bus
