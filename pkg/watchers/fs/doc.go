// Package fs is the filesystem watcher: it keeps the desired-state index
// (package resources) true to the definition files of muster's layout and
// publishes a ResourceChanged for every change it makes there.
//
// Place in the pipeline: first, beside the Kubernetes watcher.
//
//	<config-dir>/mcpservers/*.yaml ─┐
//	<config-dir>/workflows/*.yaml  ─┴─ fsnotify ─▶ fs-watcher ─▶ resources.Index
//	                                                    └──ResourceChanged / IndexSynchronized──▶ debouncer
//
// Besides the guarantees of every watcher (package watchers), it
// guarantees:
//
//   - One IndexSynchronized, published once the whole initial listing is in
//     the index, also when the config directory does not exist yet: an empty
//     listing is then the truth.
//   - It converges on what is on disk, whatever the sequence of events.
//     An event is only a hint that something changed: the file it names is
//     read again (or found gone), so a delete followed by a create, an
//     editor's rename over the original, or a Kubernetes ConfigMap's atomic
//     swap of its ..data link all end in the index holding what the files
//     say now. The first event of a file after a quiet is read at once,
//     and published at once if the file holds documents that all decode
//     and still declares every resource it declared before:
//     the debouncer downstream coalesces what follows, so a change costs no
//     added delay. Anything else (a file gone, empty, unreadable or not
//     decoding, what a writer's truncate or an editor's delete leaves for an
//     instant), and every later event of a burst, waits for quiet
//     (settleDelay, at most maxSettle after the first event), with another
//     immediate try at the file's next event while it has not read well.
//     A size that a buffered writer's unfinished write leaves (a multiple of
//     4 KiB) also waits for quiet. So a delete and re-create is never
//     published as a delete, nor is a multi-document file caught half
//     written, and a half-written file never turns its resource to Error.
//     What the early read cannot rule out: a writer that writes one file
//     with several unbuffered writes, pausing between them, may have a part
//     read that happens to decode and be valid (a list cut short); it is
//     in force until the rest arrives, which is read once quiet. Writing to
//     a temporary file and renaming it over the definition, as editors and
//     Kubernetes' ConfigMap volumes do, is never read half written.
//   - A file that cannot be used is an error, never a delete and never a
//     crash or a hang: one that cannot be read (permission denied, a
//     symlink loop, a directory named x.yaml, a named pipe, more than 4 MiB),
//     fails to parse (or panics the decoder), or is empty (what a writer's
//     truncate leaves for an instant) is recorded on its resources, whose
//     last good definition stays in force. A document whose kind does not
//     belong in its directory is an error naming the file. Errors name files
//     relative to the config directory, and are logged once, when they
//     appear. A document's warnings (fields the decoder ignored) are
//     logged once per change of the document, as one WARN line.
//   - A resource is deleted only when its file is gone, or its directory is
//     confirmed gone by a second look: a directory that cannot be listed
//     deletes nothing.
//   - A kind directory replaced while a scan lists it (renamed over, a
//     ConfigMap's link swapped, removed) is listed again: the scan ends
//     with what the path names then, never with the old directory's
//     files. One replaced at every listing of a scan (three) leaves the
//     index as it was and is scanned again after the next quiet.
//   - Only definition files count: *.yaml and *.yml directly in a kind
//     directory, not hidden, which rules out editors' swap, backup and
//     probe files (.x.yaml.swp, .#x.yaml, x.yaml~, 4913). The watcher
//     watches the kind directories alone, so the status files that musterd
//     writes under <state-dir>/status/ (which may be inside the config
//     directory) never trigger anything: no self-feeding loop.
//   - Directories that appear late are picked up: when the config
//     directory or a kind directory is missing, the nearest existing parent
//     is watched for its creation; a directory that is removed and recreated
//     is watched again.
//   - A lost event is repaired: an fsnotify queue overflow rescans
//     everything, and so does a periodic rescan (Options.RescanInterval) for
//     filesystems that miss events. Rescans publish only real differences,
//     and read only the files whose stamp (inode, size, modification and
//     change times) differs from their last read, or that were written
//     within a few seconds of it (stamps.go). A stamp is kept as a 64-bit
//     print: two versions of a file share one once in 2⁶⁴, and then only
//     a rescan, never an event, takes the new one for the old.
//
// Cost: one goroutine and one fsnotify watcher; one read per changed file,
// a directory listing only for directory-level events, overflows and the
// periodic rescan. A listing stats each file but makes no garbage for one
// whose stamp is unchanged beyond stat(2)'s copy of its name (16 bytes):
// a daemon at rest does not grow its heap with its rescans (listing.go).
package fs
