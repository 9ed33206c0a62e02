package redact_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/musterd/musterd/pkg/redact"
)

func TestArgsRedactsSecretKeysAndSecretsInStringsAtAnyDepth(t *testing.T) {
	in := map[string]any{
		"token": "sk-1", "q": "ok", "n": 3.0, "on": true, "none": nil,
		"url":    "https://u:pw@example.com/x",
		"nested": map[string]any{"api_key": map[string]any{"x": 1}, "list": []any{"password=hunter2", 1.0, map[string]any{"secret": "s"}}},
	}
	got := redact.Args(in)
	assert.Equal(t, map[string]any{
		"token": "[redacted]", "q": "ok", "n": 3.0, "on": true, "none": nil,
		"url":    "https://[redacted]@example.com/x",
		"nested": map[string]any{"api_key": "[redacted]", "list": []any{"password=[redacted]", 1.0, map[string]any{"secret": "[redacted]"}}},
	}, got)
	assert.Equal(t, "sk-1", in["token"], "m is not changed")
	assert.Nil(t, redact.Args(nil))

	assert.Equal(t, `{"q":"ok","token":"[redacted]"}`, redact.ArgsJSON(map[string]any{"token": "sk-1", "q": "ok"}))
	long := redact.ArgsJSON(map[string]any{"q": strings.Repeat("é", 3000)})
	assert.LessOrEqual(t, len(long), redact.MaxArgsJSON+len("…"))
	assert.True(t, strings.HasSuffix(long, "…"))
	assert.True(t, strings.ToValidUTF8(long, "?") == long, "cut on a character boundary")
}
