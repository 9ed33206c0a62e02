// Package peer names the MCP client a call comes from, as the managed
// servers see it: what it offered in initialize, and how to ask it for
// what a server asks while it handles the call (a sampling, an
// elicitation, its roots) or to tell it what a server logged.
//
// It is a leaf beside events. The endpoint (package mcpserve) implements
// Peer over its client sessions and puts the calling one in each call's
// context (With); the router carries the context unchanged; the supervisor
// reads it (From) to give the call a session of its own to the server, one
// that offers the server exactly what this client offered and passes the
// server's requests back to this client and no other.
//
// Guarantees:
//   - A Peer is one client session. A Peer taken from a call's context is
//     bound to that call: its requests and notifications travel on the
//     call's own stream where the transport has one. Session returns the
//     same client unbound (the session's standalone stream).
//   - Capabilities are exactly what the client declared, roots included or
//     not as it declared them.
//   - Changed is closed at the client's next logging/setLevel or
//     notifications/roots/list_changed, so that whoever keeps a session to
//     a server on the client's behalf can pass them on.
//
// A client of MCP 2026-07-28 has no session and is no Peer: its call's
// context says instead that it takes a server's input-required results
// itself (WithRelay, with the capabilities its request declared), and its
// retry carries its answers and the server's request state (WithRound).
// A call made on such a client's behalf whose result is not the client's
// (a workflow's step) is neither (WithoutRelay).
package peer
