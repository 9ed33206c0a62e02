// Package api is musterd's HTTP API: health, readiness and metrics, the
// declared resources with their spec in force, their status and reconcile
// state, manual reconciles, and a server-sent-events stream of the live
// bus.
//
// Place in the pipeline: at its end, beside the status store. It reads the
// desired-state index (resources), the status store (statusync) and what
// the reconcilers observed, triggers reconciles through a function the
// daemon wires to the coordinator, and subscribes to the bus for the event
// stream only while a client is connected. The wire format is package
// types; package client speaks it.
//
// Endpoints (kinds in paths: mcpservers, workflows, or any alias
// types.ResolveKind accepts):
//
//	GET  /healthz                                   components' state and health; 503 if one is unhealthy
//	GET  /readyz                                    200 once the first full reconcile is done, else 503
//	GET  /metrics                                   Prometheus
//	GET  /api/v1/resources?kind=&namespace=         {"items":[…]}, sorted by kind, namespace, name
//	GET  /api/v1/resources/{kind}/{namespace}/{name}
//	POST /api/v1/resources/{kind}/{namespace}/{name}/reconcile   202, or 503 naming the leader on a follower; bearer token when configured
//	GET  /api/v1/resources/{kind}/{namespace}/{name}/events      recent events; bearer token when configured
//	GET  /api/v1/events?kind=&namespace=&name=&type=             text/event-stream; bearer token when configured
//	GET  /api/v1/executions?workflow=&status=&limit=&offset=     workflow executions, newest first; bearer token when configured
//	GET  /api/v1/executions/{id}                                 one execution with its steps; bearer token when configured
//
// With Options.Controls (package controls), the operators' controls:
//
//	POST /api/v1/services/{namespace}/{name}/{start,stop,restart}?reason=   the request's outcome; 404, 409 refused, 503 follower; bearer token
//	POST /api/v1/kinds/{kind}/{enable,disable}                     the kind's state; bearer token
//	GET  /api/v1/kinds                                             the kinds, enabled or not
//	POST /api/v1/resync?kind=                                      202, the keys triggered; bearer token
//	GET  /api/v1/overview                                          mode, role, kinds, queue, states, last resync, tools
//
// NewProbeHandler serves /healthz, /readyz and /metrics alone, for a
// separate probe listener (musterd run -health-listen) that the kubelet
// and Prometheus reach while the API itself stays on loopback: it shows no
// resource, no event and triggers nothing, and answers 404 for every other
// path.
//
// Guarantees:
//
//   - Secrets never reach a client: the values of an MCPServer's env and
//     headers are replaced by "[redacted]", credentials in its URL are
//     redacted, and every error text (reconcile errors, file errors,
//     component errors) is passed through redact.String.
//   - A resource of a kind whose reconciliation is disabled says so in
//     reconcile.note ("reconciliation disabled").
//   - The spec shown is the one in force: the last good definition, kept
//     while a malformed edit is reported as the resource's error.
//   - A running stdio MCPServer's object names its process (process.pid,
//     with Options.Process): what an operator or the live page kills or
//     inspects; nothing else of the process is shown.
//   - An MCPServer's object carries its recent tool calls (calls, with
//     Options.Calls: the router's history, counts per interval over the
//     last ten minutes, errors apart, with their totals), absent when it
//     had none. The bus's ToolCallsCounted names the server once an
//     interval with calls is over: the moment to read it again.
//   - Only declared resources are shown: a status left in the store for a
//     resource no longer in the index is not listed.
//   - Answers are deterministic: JSON with a stable field order, listings
//     sorted, every error as {"error":"…"} with its status code (400 bad
//     name, 401 bad token, 404 unknown kind, resource or path, 405 method).
//   - With a token configured, every mutating request and every event
//     endpoint needs "Authorization: Bearer <token>" and is answered 401
//     without it. The token is compared in constant time, independent of
//     its length.
//   - The event stream never slows the pipeline: each client is a
//     bus.Lossy(1024) subscription of its own, so a slow client loses its
//     own events (counted by the bus and announced in the stream as a
//     ": dropped N" comment) and delays nothing else. The subscription ends
//     when the client goes, when a write stalls for a minute, or when the
//     bus closes.
package api
