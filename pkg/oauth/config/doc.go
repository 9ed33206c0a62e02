// Package config is muster's aggregator.oauth section of config.yaml as
// musterd reads it: its keys, typed, with muster's defaults, and checked.
// The two roles muster names are its two halves: MCPClient (musterd as an
// OAuth client of protected MCP servers, on its users' behalf) and Server
// (musterd as the OAuth authorization server protecting its own endpoint).
//
// Place: a leaf. Only pkg/redact may be imported by it (to keep a
// credential held in a bad URL out of an error); the wiring (cmd/musterd)
// reads the section with Load, and the OAuth parts to come read the
// Config it returns.
//
// Guarantees:
//   - Every key of muster's OAuthConfig is known, with muster's default;
//     a key Load does not know is an error naming its path and, where one
//     is close, the key meant: under oauth a typo must not silently weaken
//     security.
//   - Every error names the key's path (aggregator.oauth.server.baseUrl)
//     and, for a *File key, the file.
//   - A Config from Load is valid as a whole (Validate): URLs are absolute
//     and https unless their host is loopback, secrets read from their
//     files, a key and its File twin never both set, sessionDuration a
//     positive duration, encryptionKey 32 bytes, valkey storage with a
//     URL, and provider google refused while the server role is enabled
//     (musterd does not implement it yet).
//   - A secret (a client secret, the registration token, the encryption
//     key, the Valkey password) is a Secret: every way of printing or
//     encoding it (fmt's verbs, JSON, YAML, text, slog) shows <redacted>,
//     so it cannot reach a log, a status, the API or an MCP result by
//     being formatted. Only Reveal gives its value.
package config
