package redact_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/musterd/musterd/pkg/redact"
)

func TestArgvHidesSecretFlagValuesAndSecretsInArguments(t *testing.T) {
	args := []string{"serve", "--token", "sk-live-123", "--api-key=abc", "-password", "hunter2",
		"--url", "https://user:pw@example.com/x", "--verbose", "--api-key", "k2", "--port", "8080"}
	got := redact.Argv(args)
	assert.Equal(t, []string{"serve", "--token", "[redacted]", "--api-key=[redacted]", "-password", "[redacted]",
		"--url", "https://[redacted]@example.com/x", "--verbose", "--api-key", "[redacted]", "--port", "8080"}, got)
	assert.Equal(t, "sk-live-123", args[2], "args is not changed")
	assert.Nil(t, redact.Argv(nil))
	assert.Equal(t, []string{"sk-live-123", "abc", "hunter2", "k2"}, redact.ArgvSecrets(args))
}
