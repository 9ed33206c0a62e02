// Package types is the wire format of musterd's HTTP API: the JSON
// documents the server (package api) writes and the client (package
// client) reads, the resource kinds with the names paths and the command
// line accept, and the event stream's filter.
//
// Place in the pipeline: none; it describes the API at the end of it. It
// imports only events and the v1alpha1 kind names, so a program that talks
// to musterd need not link the daemon.
//
// Guarantees:
//
//   - One spelling of every document: the server encodes and the client
//     decodes these very structs, so the two cannot drift apart. Struct
//     fields give JSON a stable field order; maps are encoded with sorted
//     keys.
//   - Kind names resolve the same everywhere: the lowercase plural
//     (mcpservers), singular (mcpserver), short name (mcps) and the kind
//     itself (MCPServer), case-insensitively; anything else is an error
//     naming the valid kinds.
//   - An event filter means the same on both sides: the client encodes it
//     as the query the server parses, and Match is what the server applies.
package types
