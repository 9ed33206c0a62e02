// Package files is the filesystem-mode StatusWriter: it writes each
// resource's status to <state-dir>/status/<kinds>/<namespace>/<name>.yaml,
// where <kinds> is the lower-case plural of the kind (mcpservers,
// workflows), as in the API's paths.
//
// Place in the pipeline: behind the status store (pkg/statusync), which
// calls it from its writer goroutine.
//
// Guarantees:
//
//   - A status file is replaced atomically: written to a temporary file in
//     the same directory, synced, and renamed over the old one. A reader
//     sees the old status or the new one, never a part of either, and so
//     does a crash of the machine. The directory is not synced after the
//     rename, so such a crash may bring back the status before the last
//     writes (or no file, for a resource new since): the next start
//     reconciles every resource and writes its status again. A crash
//     leaves at most a stray temporary file per
//     resource, which the next process removes at its first write into
//     that directory (once per directory: a listing per write would cost
//     O(resources) per write).
//   - It never writes into a definition file: status lives under its own
//     status/ directory, which the watchers do not look at, so a status
//     write never triggers a reconcile.
//   - Status files are readable by their owner only (mode 0600), and the
//     directories under the state dir (status/, status/<kinds>/,
//     status/<kinds>/<namespace>/) are its owner's only: created 0700, and
//     an existing one that grants its group or others anything (0755 from
//     an earlier version) is restricted at the first write into it. A
//     status names commands, URLs and errors, though never an env value or
//     header.
//   - Deleting a status that is not there is not an error.
//   - Errors name the status file relative to the state dir, and carry a
//     category for metrics ("permission_denied", "no_space", "other").
package files
