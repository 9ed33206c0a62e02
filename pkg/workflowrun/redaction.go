package workflowrun

import "github.com/musterd/musterd/pkg/redact"

// redactSecretKeys returns v with the values under secret-looking keys
// replaced, recursively, and nothing else changed: what a tool returned is
// kept as it was (paths included) in the execution record, but a token it
// handed back under a key that says so is not.
func redactSecretKeys(v any) any {
	switch v := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, e := range v {
			if redact.IsSecretKey(k) {
				out[k] = "[redacted]"
				continue
			}
			out[k] = redactSecretKeys(e)
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = redactSecretKeys(e)
		}
		return out
	case []map[string]any: // the result document's steps
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = redactSecretKeys(e)
		}
		return out
	}
	return v
}
