// Package identity names who a request comes from: the user, when musterd
// authenticates its callers, and the session the request belongs to. What
// musterd keeps per user (a login to a protected server, its own
// connection to that server, the tools it sees there) is keyed by Owner.
//
// It is a leaf, like package peer. The endpoint puts the caller's Identity
// in each request's context (With); the stages that keep per-user state
// read it (From).
//
// Guarantees:
//   - Owner is never empty for an Identity that has a Subject or a
//     Session, and two identities share an Owner exactly when they are the
//     same user, or, without a user, the same session. Without
//     authentication every session is its own owner: nothing one client
//     logs in to is another's.
//   - An Identity holds no credential: tokens are kept by whoever issued
//     or received them, by Owner, never in a context.
package identity
