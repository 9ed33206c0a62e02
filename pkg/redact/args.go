package redact

import (
	"encoding/json"
	"unicode/utf8"
)

// Args returns a tool call's arguments fit to keep or show: the value
// under every secret-looking key (IsSecretKey) replaced whole, and every
// other string passed through String, at any depth of maps and lists.
// Numbers, booleans and nil are kept. m is not changed. The one argument
// redaction of musterd: the router's and the MCP endpoint's logs, and the
// workflow engine's execution records, use it.
func Args(m map[string]any) map[string]any {
	if m == nil {
		return nil
	}
	out := make(map[string]any, len(m))
	for k, v := range m {
		if isSecretKey(k) {
			out[k] = redacted
			continue
		}
		out[k] = argValue(v)
	}
	return out
}

func argValue(v any) any {
	switch v := v.(type) {
	case string:
		return String(v)
	case map[string]any:
		return Args(v)
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = argValue(e)
		}
		return out
	}
	return v
}

// MaxArgsJSON bounds ArgsJSON's text: a log line stays a line.
const MaxArgsJSON = 2048

// ArgsJSON is Args(m) spelt as JSON for a log line, cut to MaxArgsJSON
// bytes (on a character boundary, marked by "…").
func ArgsJSON(m map[string]any) string {
	data, err := json.Marshal(Args(m))
	if err != nil {
		return "(not encodable)"
	}
	if len(data) > MaxArgsJSON {
		cut := MaxArgsJSON
		for cut > 0 && !utf8.RuneStart(data[cut]) {
			cut--
		}
		data = append(data[:cut:cut], "…"...)
	}
	return string(data)
}
