// Package resources is the desired-state index: for every declared
// resource, the definition in force, the file that declares it, and what is
// wrong with that file now, if anything.
//
// Place in the pipeline: beside the watchers, which write it, and read by
// the reconcilers and the API. It imports only events; what a definition is
// (an MCPServer, a Workflow) is the caller's business.
//
// Guarantees:
//
//   - The last good definition stays in force. A file that cannot be read or
//     parsed, or a document that fails validation, leaves the definition it
//     had in place and records the error on its key; it is never taken for a
//     delete.
//   - A resource is deleted only when no file declares it any more.
//   - Two files claiming one identity are an error on that key naming both
//     files, never a silent winner; the definition in force before the
//     conflict stays until it is resolved.
//   - Changes are reported only when something a reconciler or a user sees
//     differs: the definition's hash, the error, the file, or presence.
//   - An entry's warnings (what the decoder ignored) are those of its
//     definition in force, and change with it; a document's hash covers
//     its warnings, so a change of them is a change.
package resources
