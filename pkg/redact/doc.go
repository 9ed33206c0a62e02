// Package redact removes secrets from text before it reaches logs, status,
// events or the API: credentials in URLs, bearer tokens, secret-looking
// key=value pairs, private keys, and absolute paths (only their base name
// is kept); and from command lines (Argv), the value after a
// secret-looking flag; and from a tool call's arguments (Args, ArgsJSON),
// the one argument redaction every stage uses.
//
// Place in the pipeline: a leaf beside events. Every stage may import it,
// and redacts a message where the message is made, so an unredacted secret
// never travels on the bus, into a trace, or into a log line.
//
// Guarantees: String is idempotent, never lets a secret-looking value
// through whatever separator or quoting surrounds it, and leans towards
// redacting too much rather than too little. One kind of key is exempt:
// the field paths of an MCPServer's spec.auth (spec.auth.type,
// spec.auth.tokenExchange.connectorId), which hold no secret, so that
// their validation problems stay readable (fieldpaths.go).
package redact
