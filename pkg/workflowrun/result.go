package workflowrun

import (
	"encoding/json"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// resultSize is the size of res's text and structured content.
func resultSize(res *mcp.CallToolResult) int {
	n := 0
	for _, c := range res.Content {
		if t, ok := c.(*mcp.TextContent); ok {
			n += len(t.Text)
		} else if data, err := json.Marshal(c); err == nil {
			n += len(data)
		}
	}
	if res.StructuredContent != nil {
		if data, err := json.Marshal(res.StructuredContent); err == nil {
			n += len(data)
		}
	}
	return n
}

// resultValue is a result as templates see it: the first text content
// parsed when it is JSON, else the structured content, else the text.
func resultValue(res *mcp.CallToolResult) any {
	var text *string
	for _, c := range res.Content {
		if t, ok := c.(*mcp.TextContent); ok {
			text = &t.Text
			break
		}
	}
	if text != nil {
		var v any
		if json.Unmarshal([]byte(*text), &v) == nil {
			return v
		}
	}
	if res.StructuredContent != nil {
		if data, err := json.Marshal(res.StructuredContent); err == nil {
			var v any
			if json.Unmarshal(data, &v) == nil {
				return v
			}
		}
	}
	if text != nil {
		return *text
	}
	return nil
}
