// Package controls is what operators use to change what runs and how
// reconciliation proceeds: start, stop and restart a declared MCP server;
// enable and disable reconciliation per kind; resync on demand; and the
// overview of it all. The HTTP API, the CLI (through the API) and the core
// MCP tools all call it, so every surface behaves alike.
//
// Place in the pipeline: an edge, like the API. Every request goes through
// the pipeline, never around it: a service request is recorded as an
// override (package services) and reconciled like a change; a resync is a
// ReconciliationTriggered for the kind's listed keys, desired and running
// alike, so orphans are pruned; enabling a kind is the coordinator's
// SetKindEnabled, which reconciles every key of the kind once.
//
//	API, CLI, core tools ──▶ controls ──▶ services.Overrides ──(read by)──▶ MCPServer reconciler
//	                                 └──ServiceRequested, ReconciliationTriggered──▶ bus ──▶ coordinator
//
// Guarantees:
//
//   - Every request is an event on the bus (ServiceRequested,
//     ReconciliationToggled, ResyncRequested) whose correlation ID the
//     reconcile it causes carries, so `musterd describe` and `musterd
//     events` show the request and its outcome as one chain.
//   - A service request is persisted before it is answered, and answered
//     with the outcome of the reconcile it caused (the server's state) and,
//     when that reconcile started the server, of the start (which runs on
//     the supervisor's goroutines and is reconciled after it), or, past
//     Options.WaitTimeout, with the request accepted and the state so far.
//     It never hangs.
//   - Only declared MCP servers are services: a request for anything else
//     fails with a not-found error, and changes nothing.
//   - Errors and reasons are redacted before they are published or
//     returned.
package controls
