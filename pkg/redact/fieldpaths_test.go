package redact_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/musterd/musterd/pkg/redact"
)

func TestAuthFieldPathsAreNotSecretKeys(t *testing.T) {
	for _, tc := range []struct {
		name, in, want string
		secrets        []string
	}{
		{name: "a validation problem of spec.auth", in: `mcpservers/api.yaml:9: spec.auth.type: unsupported value "basic": must be one of "oauth", "none"`,
			want: `mcpservers/api.yaml:9: spec.auth.type: unsupported value "basic": must be one of "oauth", "none"`},
		{name: "a path with token in it", in: "spec.auth.tokenExchange.dexTokenEndpoint: required when enabled",
			want: "spec.auth.tokenExchange.dexTokenEndpoint: required when enabled"},
		{name: "spec.auth itself", in: "spec.auth: cannot decode", want: "spec.auth: cannot decode"},
		{name: "a URL's userinfo in the value", in: `spec.auth.authorizationServer.issuer: "https://bob:hunter2@auth.example.com" does not match`,
			want: `spec.auth.authorizationServer.issuer: "https://[redacted]@auth.example.com" does not match`, secrets: []string{"hunter2"}},
		{name: "a token inside the value", in: `spec.auth.tokenExchange.dexTokenEndpoint: "https://dex/?access_token=t9" does not match`,
			want: `spec.auth.tokenExchange.dexTokenEndpoint: "https://dex/?access_token=[redacted]" does not match`, secrets: []string{"t9"}},
		{name: "other keys with auth stay secret", in: "spec.authToken: t1 xspec.auth.type: t2 auth.type: t3",
			want: "spec.authToken: [redacted] xspec.auth.type: [redacted] auth.type: [redacted]", secrets: []string{"t1", "t2", "t3"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := redact.String(tc.in)
			assert.Equal(t, tc.want, got)
			for _, s := range tc.secrets {
				assert.NotContains(t, got, s)
			}
			assert.Equal(t, got, redact.String(got), "String is idempotent")
		})
	}
}
