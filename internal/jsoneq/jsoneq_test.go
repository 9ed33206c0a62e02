package jsoneq

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestEqualComparesEncodings(t *testing.T) {
	schema := map[string]any{"type": "object", "properties": map[string]any{"a": map[string]any{"type": "string"}}}
	raw := json.RawMessage(`{"properties":{"a":{"type":"string"}},"type":"object"}`)
	assert.True(t, Equal(schema, raw), "a map and its encoding are the same to a client")
	assert.True(t, Equal([]string{"a"}, []any{"a"}))
	assert.False(t, Equal(schema, map[string]any{"type": "object"}))
	assert.False(t, Equal(nil, []string{}), "null is not []")
	unencodable := map[string]any{"f": func() {}}
	assert.False(t, Equal(unencodable, unencodable), "what does not encode is taken as changed")
}
