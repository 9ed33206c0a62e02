// Package kube is the Kubernetes watcher: it keeps the desired-state index
// (package resources) true to the MCPServer and Workflow custom resources
// of an API server, through controller-runtime informers, and publishes a
// ResourceChanged for every change it makes there.
//
// Place in the pipeline: first, beside the filesystem watcher, and on every
// replica, leader or not, so that a new leader starts warm.
//
//	API server ──list/watch──▶ cache.Cache informers ──▶ kube-watcher ──▶ resources.Index
//	                                                         └──ResourceChanged / IndexSynchronized──▶ debouncer
//
// The reconcilers read the same index as in filesystem mode, so they work
// unchanged. Each resource is declared in the index under the path
// kube/<namespace>/<kind>/<name> (see [Path]), which never collides with the
// filesystem watcher's mcpservers/ and workflows/ paths.
//
// Guarantees:
//
//   - One IndexSynchronized (source kubernetes), published once every
//     informer's initial listing has been handed to the index; [Watcher.Synced]
//     is closed then. The debouncer holds this source's changes until it
//     comes, so the first reconcile sees the complete listing.
//   - Only spec changes count: an update of the same object (UID) whose
//     metadata.generation equals the one last seen is ignored, so a
//     status-only update (musterd's own status writes, or anybody's) and the
//     informers' periodic resync never trigger a reconcile. The generation
//     is compared, not the resourceVersion, which every status write bumps
//     (muster's bug); and the UID with it, because a resource deleted and
//     created again while the watch was down comes back on the relist as an
//     update whose generation (1 again) may equal the old one. One
//     metadata change counts too: of musterd's own annotations
//     (musterd.io/…: the exposure policy, client sessions), which the API
//     server changes without a new generation; the index's hash covers
//     them.
//   - Every generation reconciles: the index's hash covers the UID and the
//     generation, so observedGeneration always catches up with a spec
//     change, and a recreated object is reconciled and gets its status.
//   - A resource that fails validation (v1alpha1's Validate, which may be
//     stricter than the CRD's schema) is an error on its key, naming the
//     resource, its generation and the fields; its last good definition stays
//     in force, and the error reaches its status as a file's would.
//   - A resource is deleted only when the informer reports its deletion.
//   - Namespace-scoped (Options.Namespace) or cluster-wide.
//   - Start fails with an error naming the cause when the informers cannot
//     be set up (the CRDs are not installed, the API server refuses) or do
//     not sync within Options.SyncTimeout; it never falls back to anything.
//     Once synced, an API server outage stops nothing: the informers keep the
//     last listing and catch up, relisting, when the server is back.
//
// Cost: one informer (a list, then one watch) per kind, and the
// informers' in-memory copies of the resources.
package kube
