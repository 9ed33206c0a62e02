// Package registry keeps the funcs registered to hear of something (a
// catalogue change, a server's lists or resource updates, the router's
// lists): registered, cancelled, and called in the order they registered.
//
// Place: a leaf below the stages that tell others of their changes
// (supervisor, catalogue, router); it knows nothing of them.
//
// Guarantees: Add and the cancel it returns are safe for concurrent use
// with each other and with All; a cancel is idempotent; All is a snapshot,
// so a func it returns may be called without the registry's lock held and
// may cancel its own registration.
package registry
