package redact

// IsSecretKey reports whether a value under key is a secret by the rule
// String applies to key=value pairs: the key holds one of the secret terms
// (password, token, secret, api key, …) or the word auth or pwd. Callers
// that hold structured data (a map of arguments) redact by it.
func IsSecretKey(key string) bool { return isSecretKey(key) }
