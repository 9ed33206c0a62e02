// Package declare changes what is declared: it validates, creates, updates
// and deletes MCPServer and Workflow definitions where the watchers read
// them, the definition files of muster's layout (filesystem mode) or the
// custom resources (Kubernetes mode).
//
// Place in the pipeline: beside it, at the edge, like a user's editor or
// kubectl. It never reconciles, never touches the index and never
// publishes: the watcher sees what it writes like any other edit, and the
// pipeline reconciles it. There is no second path by which a change takes
// effect.
//
//	core_*_create/update/delete, API ──▶ declare ──write──▶ mcpservers/x.yaml or the CR
//	                                                          └──▶ watcher ──▶ debouncer ──▶ …
//
// Guarantees:
//
//   - Validation runs before anything is written, with the file decoder
//     itself (v1alpha1.DecodeFile) over the document about to be written:
//     an error names the field in the decoder's words ("spec.timeout: …",
//     "spec.foo: unknown field"), and what is written is exactly what the
//     watcher will accept. Lines and file names of the generated document
//     are left out of the error: the caller wrote no file. Unlike a file,
//     a definition declared here may hold no field the schema lacks: what
//     the decoder would ignore with a warning is refused, as muster's tools
//     refuse unknown fields.
//   - A create of a name that exists fails (ExistsError); an update or
//     delete of a name that does not fails (NotFoundError).
//   - Never clobber: an update or delete acts only on the version it read,
//     or on the version the caller names (Definition.Version: the file's
//     content hash, or the CR's resourceVersion). A file changed by someone
//     else in between is left as it is and the call fails with a
//     ConflictError; in Kubernetes mode the API server's optimistic
//     concurrency says the same.
//   - A file that declares more than the one resource (several documents,
//     or another resource) is never rewritten or removed: the others would
//     go with it (UneditableError). A file of the one resource that no
//     longer validates may be repaired by an update.
//   - Files are written atomically, 0600: a hidden temporary file in the
//     same directory (which the watcher ignores), fsync, rename over the
//     definition, fsync of the directory. A reader sees the old file or the
//     new one, never a part.
//   - A create writes the metadata it is given (Meta: annotations) with
//     the definition; an update keeps the metadata it finds.
//   - Values of env and headers are written as given, but never appear in
//     an error or a log: they are scrubbed from every message.
package declare
