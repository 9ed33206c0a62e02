// Package watchers is the head of musterd's pipeline: watchers observe where
// resources are declared and publish what they see on the bus.
//
// Place in the pipeline: first. A watcher publishes on the bus and reads
// nothing of the later stages: it may use events, bus, redact, the resource
// types and the resources index (the filesystem watcher) or the supervisor
// and catalogue (the runtime bridge), as internal/archtest records.
//
// Every watcher, in its own subpackage, guarantees:
//
//   - a ResourceChanged for every resource it lists at start, then an
//     IndexSynchronized once that listing is complete, so the first
//     reconcile sees everything and nothing is mistaken for deleted;
//   - afterwards, a ResourceChanged for every real change (create, update,
//     delete), carrying the resource's canonical key;
//   - no event for a change that is not real: a rewrite with the same
//     content, or a status-only update.
//
// The filesystem watcher (fsnotify) and the Kubernetes watcher
// (controller-runtime informers) arrive in their own subpackages.
package watchers
