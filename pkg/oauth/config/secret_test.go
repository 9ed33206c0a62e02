package config_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"

	"github.com/musterd/musterd/pkg/oauth/config"
)

// withSecrets is a config holding each secret, each a marker to grep for.
func withSecrets(t *testing.T) (config.Config, []string) {
	t.Helper()
	markers := []string{"dex-s3cr3t", "google-s3cr3t", "reg-t0ken", key32, "valkey-passw0rd"}
	cfg, err := load(t, section(t,
		kv{"server.dex.clientSecret", markers[0]}, kv{"server.google.clientSecret", markers[1]},
		kv{"server.registrationToken", markers[2]}, kv{"server.encryptionKey", markers[3]},
		kv{"server.storage.valkey.password", markers[4]}))
	require.NoError(t, err)
	for i, s := range secretKeys {
		require.Equal(t, markers[i], s.get(cfg).Reveal(), "the secret is held")
	}
	return cfg, markers
}

// Whatever prints or encodes the config shows <redacted> for each secret:
// fmt's verbs, JSON, YAML, slog's handlers, and the config reached
// through an unexported field, where fmt calls no method.
func TestNoPrinterOrEncoderShowsASecret(t *testing.T) {
	cfg, markers := withSecrets(t)
	type holder struct{ oauth config.Config }
	var out []string
	for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%q", "%x", "%X", "%d"} {
		out = append(out, fmt.Sprintf(verb, cfg), fmt.Sprintf(verb, &cfg), fmt.Sprintf(verb, cfg.Server.Dex.ClientSecret),
			fmt.Sprintf(verb, holder{cfg}), fmt.Sprintf(verb, &holder{cfg}))
	}
	data, err := json.Marshal(cfg)
	require.NoError(t, err)
	out = append(out, string(data))
	data, err = yaml.Marshal(cfg)
	require.NoError(t, err)
	out = append(out, string(data))
	for _, h := range []func(*bytes.Buffer) slog.Handler{
		func(b *bytes.Buffer) slog.Handler { return slog.NewTextHandler(b, nil) },
		func(b *bytes.Buffer) slog.Handler { return slog.NewJSONHandler(b, nil) },
	} {
		var b bytes.Buffer
		slog.New(h(&b)).Info("config", "oauth", cfg, "secret", cfg.Server.RegistrationToken, "server", cfg.Server)
		out = append(out, b.String())
	}
	all := strings.Join(out, "\n")
	for _, m := range markers {
		assert.NotContains(t, all, m)
	}
	assert.Contains(t, all, config.Redacted)
	assert.Contains(t, string(data), "clientSecret: <redacted>", "YAML shows the key, redacted")
}

// The JSON view says which secrets are set, and shows none.
func TestTheJSONShowsWhichSecretsAreSet(t *testing.T) {
	cfg, _ := withSecrets(t)
	data, err := json.Marshal(cfg.Server.Dex)
	require.NoError(t, err)
	assert.JSONEq(t, `{"IssuerURL":"","ClientID":"","ClientSecret":"<redacted>","ClientSecretFile":"","ConnectorID":"","AllowPrivateIPOIDC":false}`, string(data))
	data, err = json.Marshal(config.Default().Server.Dex)
	require.NoError(t, err)
	assert.Contains(t, string(data), `"ClientSecret":""`, "unset shows empty")

	data, err = json.Marshal(config.Default().Server)
	require.NoError(t, err)
	assert.Contains(t, string(data), `"SessionDuration":"720h0m0s"`, "a duration's text, not nanoseconds")
}

func TestASecretRevealsItsValueAndNothingElseDoes(t *testing.T) {
	s := config.NewSecret("v")
	assert.Equal(t, "v", s.Reveal())
	assert.True(t, s.IsSet())
	assert.Equal(t, "<redacted>", s.String())
	assert.False(t, config.NewSecret("").IsSet())
	assert.Equal(t, "", config.NewSecret("").String())
	assert.Equal(t, config.NewSecret("v"), config.NewSecret("v"), "equal by value under reflect.DeepEqual")
}
