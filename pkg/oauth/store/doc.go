// Package store keeps musterd's OAuth state at rest: tokens, login states
// and client registrations, as byte values under string keys, in memory or
// in Valkey (or Redis), sealed with AES-256-GCM.
//
// Place: a leaf below the OAuth flows (pkg/oauth/…), which encode their
// own records and choose their own keys; it knows nothing of the pipeline,
// of identities or of token formats, and imports nothing of musterd's.
//
// Guarantees:
//
//   - One interface, [Store], three implementations with the same
//     behaviour, checked by one conformance suite: [NewMemory] (this
//     process only; expiries against MemoryOptions.Now, so tests control
//     time), [NewValkey] (survives a restart of musterd, shared by
//     several musterds on one server), and [Encrypted] over either.
//   - Put replaces a value and its expiry; ttl 0 means none. An expired
//     value is never returned, by Get, Take or Keys. Take is one atomic
//     step (GETDEL in Valkey): of concurrent Takes of a key, one alone
//     finds the value, so a login state is used once. Keys lists by
//     prefix, sorted, without Valkey's KeyPrefix; prefixes are matched
//     literally, glob characters included.
//   - Values are copied in and out; an empty value is found as empty.
//   - NewValkey pings the server at start: an unreachable server, one
//     refusing the password or the TLS handshake, is an error there naming
//     the server's address, never a silent fallback to memory. Every key
//     in the server starts with KeyPrefix (default "musterd:oauth:"); a
//     value's expiry is the server's (SET … PX), so every musterd on the
//     server sees the same. It needs Redis 6.2 or later, or Valkey (for
//     GETDEL); it is tested against Debian's redis-server 7, standalone,
//     in plain TCP and TLS. After a restart of the server the client
//     reconnects by itself.
//   - Encrypted seals each value with a fresh random 96-bit nonce and binds
//     the store key as additional data: a value moved to another key,
//     sealed with another encryption key, truncated or altered fails with
//     ErrDecrypt and gives nothing back. Keys are not encrypted, so they
//     must hold nothing secret (musterd's own tokens are stored by hash).
//     A Take whose value does not decrypt still deletes it. [DecodeKey]
//     reads the key as configured (standard base64 of 32 bytes).
//   - No key, value or password reaches an error or a log: errors name the
//     operation, the server's address and a key's kind (its text up to the
//     first colon), and the package logs nothing. A Store printed with %v
//     shows its kind and address only.
//   - After Close every call returns ErrClosed.
//
// Use:
//
//	s, err := store.NewValkey(ctx, store.ValkeyOptions{URL: "valkey:6379", Password: pw})
//	if err != nil { ... } // at start: no fallback
//	s, err = store.Encrypted(s, key) // 32 bytes
//	err = s.Put(ctx, "state:"+nonce, record, 10*time.Minute)
//	record, found, err := s.Take(ctx, "state:"+nonce)
package store
