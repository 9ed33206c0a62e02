// Package v1alpha1 is musterd's copy of muster's muster.giantswarm.io/v1alpha1
// API: the MCPServer and Workflow types, their CRD defaults and validation
// rules, and a strict decoder for the definition files of filesystem mode.
//
// Place in the pipeline: beside it, not on the bus. The filesystem watcher
// decodes files with [DecodeFile] and publishes what changed (comparing
// [Document.Hash]); the Kubernetes watcher reads the same types from the API
// server, into which controller-gen turns their kubebuilder markers as
// CRDs; reconcilers act on the decoded objects. Of musterd's packages it
// imports only events.
//
// Guarantees:
//
//   - The Go types are the schema. Their JSON names, enums, patterns,
//     bounds, defaults, CEL rules and status fields match muster's CRDs, so
//     users' existing files and clusters work unchanged; status.conditions
//     carries a [ConditionReady] condition, and only status additions are
//     new (observedGeneration and warnings, MCPServer's tools and
//     toolCount, Workflow's missingTools). MCPServer's printer columns are Type, State, Tools
//     and Age (muster's URL and AutoStart with -o wide); test/crd lists and
//     justifies every difference from muster's CRDs.
//   - Decoding is strict: a value of the wrong type, a duplicate key or a
//     broken rule is an error naming the file, the line and the field path.
//     A workflow's fields may also be spelled in snake_case (allow_failure,
//     from_step, expect_not, json_path, on_failure), as muster accepts
//     them; one field set in both spellings is an error.
//   - Unknown fields (names match exactly, case included) are ignored as
//     muster's loader ignores them, never silently: each is a warning in
//     Document.Warnings naming the file, line and field
//     ("workflows/a.yaml:7: spec.input_schema: unknown field, ignored"),
//     and the warnings are part of the document's hash. An unknown field
//     close to a known one where a problem stands (the field it likely
//     misspells is missing or wrong) is an error instead
//     ("mcpservers/git.yaml:7: spec.comand: unknown field (did you mean
//     "command"?)"), beside that problem. A stdio server's auth.type
//     oauth, which muster's loader accepts and its core tools refuse, is
//     such a warning too ("spec.auth.type: \"oauth\" is only supported
//     for remote server types (streamable-http or sse), ignored").
//     [FieldErrors.Refused] turns warnings into a strict reader's errors.
//   - A file that cannot be read fails as a whole, and never looks like a
//     file without documents; a document that is wrong but whose identity is
//     known fails alone, with its identity, so no other document of the
//     file is hidden and no resource is mistaken for deleted.
//   - Identity is canonical: the namespace defaults to "default" and the
//     name of a single-document file to the file's name, and both must be
//     valid Kubernetes names, so they are safe as keys and in file paths.
//     A name may also have underscores where Kubernetes allows hyphens, as
//     muster's filesystem mode accepts ([ValidName]).
//   - Decoding is bounded: files over [MaxFileSize] are refused, and YAML
//     aliases expand to at most [MaxAliasValues] values per document, so an
//     alias bomb fails fast.
//   - One result whichever parser reads a file: files in the plain block
//     style most are written in take a fast path (yamlfast.go), all others
//     yaml.v3, and the two build the same trees, lines included (a
//     differential test and a fuzz target hold them to it).
//   - Validate works without a file too (objects from Kubernetes), naming
//     fields but no lines.
//   - Every problem validation finds says what it is besides its message:
//     [FieldError]'s Cause (required, empty, duplicate, one of), its Path
//     element by element, the fields it concerns and a duplicate's first
//     use. Programs that answer in words of their own (the core tools
//     answer in muster's) read these, never Msg; the messages stay
//     musterd's.
//
// +kubebuilder:object:generate=true
// +groupName=muster.giantswarm.io
package v1alpha1
