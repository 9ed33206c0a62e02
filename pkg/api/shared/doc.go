// Package shared holds what the two edges that serve musterd's state, the
// HTTP API (package api) and the MCP endpoint (package mcpserve), must do
// alike: the bearer-token check (Bearer), what a client is shown of an
// MCP server's spec (RedactMCPServer) and of a reconcile (ReconcileOf).
//
// Place in the pipeline: none; a leaf of the edges. It imports the wire
// types, the resource types, redact and statusync's Status, so that the
// MCP endpoint need not link the API server (its controls, traces and
// lifecycle) to share them.
//
// Guarantees: one token check, so the two edges cannot disagree about who
// is let in; one redaction of MCP server specs (env and header values,
// URL credentials, secrets in args), so neither shows what the other
// hides.
package shared
