package tooldef

import (
	"bytes"
	"encoding/json"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Text is a successful result of one text item.
func Text(text string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}}
}

// Error is a failed result of one text item.
func Error(text string) *mcp.CallToolResult {
	r := Text(text)
	r.IsError = true
	return r
}

// JSON is a successful result of v as one text item of compact JSON, as
// muster's core tools answer.
func JSON(v any) (*mcp.CallToolResult, error) {
	data, err := Marshal(v, false)
	if err != nil {
		return nil, err
	}
	return Text(string(data)), nil
}

// Pretty is a successful result of v as indented JSON, as muster's
// meta-tools answer.
func Pretty(v any) (*mcp.CallToolResult, error) {
	data, err := Marshal(v, true)
	if err != nil {
		return nil, err
	}
	return Text(string(data)), nil
}

// Marshal encodes v without escaping HTML (URLs keep their &), indented or
// not, with no trailing newline.
func Marshal(v any, indent bool) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if indent {
		enc.SetIndent("", "  ")
	}
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// SummaryMaxRunes is how long a one-line summary is at most (Summary),
// muster's: filter_tools' summaries, a failed server's status message.
const SummaryMaxRunes = 120

// Summary returns text's first line, trimmed, cut to max runes with "..."
// (no cut when max is 0).
func Summary(text string, max int) string {
	line, _, _ := strings.Cut(text, "\n")
	line = strings.TrimSpace(line)
	if r := []rune(line); max > 0 && len(r) > max {
		line = strings.TrimSpace(string(r[:max])) + "..."
	}
	return line
}
