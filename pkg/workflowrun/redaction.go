package workflowrun

import "github.com/musterd/musterd/pkg/redact"

// redactMap returns m with the values of secret-looking keys replaced and
// every string passed through redact.String, recursively.
func redactMap(m map[string]any) map[string]any {
	if m == nil {
		return nil
	}
	out := make(map[string]any, len(m))
	for k, v := range m {
		if redact.IsSecretKey(k) {
			out[k] = "[redacted]"
			continue
		}
		out[k] = redactValue(v)
	}
	return out
}

func redactValue(v any) any {
	switch v := v.(type) {
	case string:
		return redact.String(v)
	case map[string]any:
		return redactMap(v)
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = redactValue(e)
		}
		return out
	}
	return v
}

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
