package redact

import "strings"

// A definition's field path is a key to the redactor like any other, and
// spec.auth's paths hold the word auth, and some the term token
// (spec.auth.tokenExchange.dexTokenEndpoint): every validation problem of
// an MCP server's auth block ("mcpservers/api.yaml:9: spec.auth.type:
// unsupported value …") would lose its first word, and the user the
// reason. No field of spec.auth holds a secret: the credentials of a token
// exchange are in a Kubernetes Secret that spec.auth only names. So its
// paths are not secret keys. What their values hold is still redacted on
// its own terms (a URL's userinfo, a token=… inside a quoted URL).

// authFieldPath reports whether key is the field path of an MCPServer's
// spec.auth or of a field within it, as musterd's validation spells them.
func authFieldPath(key string) bool {
	return key == "spec.auth" || strings.HasPrefix(key, "spec.auth.")
}
