// Package client is the Go client of musterd's HTTP API (package api),
// used by the musterd command line.
//
// Place in the pipeline: outside it, across the network. It imports only
// the wire format (package types) and events, so programs that talk to a
// daemon do not link one.
//
// Guarantees:
//
//   - An answer other than 2xx is an *Error carrying the status code and
//     the server's message ("workflows/default/x: not found"); IsNotFound
//     tells a missing resource from a failure.
//   - Events returns once the server has subscribed the stream to its bus,
//     so whatever is published after Events returns reaches the stream
//     (unless the server drops it, which the stream reports as an Event
//     with Dropped set). Reading the state after Events returns and then
//     following the stream therefore misses no transition.
package client
