package main

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	oauthconfig "github.com/musterd/musterd/pkg/oauth/config"
)

// harnessConfig is config.yaml as muster's test harness writes it for a
// scenario whose mock identity provider muster also uses as its own OAuth
// server, with its top-level keys musterd does not use.
const harnessConfig = `
aggregator:
  enabled: true
  host: localhost
  port: 21203
  transport: streamable-http
  oauth:
    mcpClient:
      callbackPath: /oauth/proxy/callback
      enabled: true
      publicUrl: http://localhost:21203
    server:
      allowLocalhostRedirectURIs: true
      allowPublicClientRegistration: true
      baseUrl: http://localhost:21203
      dex:
        clientId: muster-client
        clientSecret: dex-s3cr3t
        issuerUrl: https://localhost:40123
      enabled: true
      provider: dex
      storage:
        type: memory
logging:
  level: debug
`

func writeConfigYAML(t *testing.T, content string) string {
	t.Helper()
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "config.yaml"), []byte(content), 0o644))
	return dir
}

// config.yaml's aggregator.oauth section is read into the typed config,
// with muster's defaults for the keys it leaves out, and the roles it
// turns on, which musterd does not play yet, are named in the log.
func TestConfigYAMLsOAuthSectionIsReadWithMustersDefaults(t *testing.T) {
	cfg, notes, err := parseDaemonFlags([]string{"-config-dir", writeConfigYAML(t, harnessConfig)}, io.Discard)
	require.NoError(t, err)
	o := cfg.oauth
	assert.True(t, o.MCPClient.Enabled)
	assert.Equal(t, "http://localhost:21203", o.MCPClient.PublicURL)
	assert.Equal(t, "/.well-known/oauth-client.json", o.MCPClient.CIMD.Path, "muster's default")
	assert.True(t, o.Server.Enabled)
	assert.Equal(t, "https://localhost:40123", o.Server.Dex.IssuerURL)
	assert.Equal(t, "dex-s3cr3t", o.Server.Dex.ClientSecret.Reveal())
	assert.True(t, o.Server.EnableCIMD, "muster's default")
	assert.Equal(t, 720*time.Hour, o.Server.SessionDuration, "muster's default")
	assert.Equal(t, []string{
		"config.yaml: ignoring keys musterd does not use: logging",
		"config.yaml: listening on aggregator.host/port localhost:21203, where muster serve would",
		"config.yaml: musterd fetches the keys and discovery documents of its issuers at any address, private ones included: allowPrivateIPJWKS, allowPrivateIPJWKSHosts and dex.allowPrivateIPOIDC have no effect yet",
	}, notes)

	cfg, notes, err = parseDaemonFlags([]string{"-config-dir", writeConfigYAML(t, "aggregator: {port: 9000}\n")}, io.Discard)
	require.NoError(t, err)
	assert.Equal(t, oauthconfig.Default(), cfg.oauth, "no section: muster's defaults")
	assert.Len(t, notes, 1)
	cfg, _, err = parseDaemonFlags([]string{"-config-dir", t.TempDir()}, io.Discard)
	require.NoError(t, err)
	assert.Equal(t, oauthconfig.Default(), cfg.oauth, "no config.yaml: muster's defaults")
}

// Unlike the rest of config.yaml, an unknown key under aggregator.oauth is
// an error: it names the file, the key's path and the key meant. A bad
// value or an unreadable *File key is one too.
func TestABadOAuthSectionIsAnErrorNamingTheFileAndTheKey(t *testing.T) {
	for content, want := range map[string]string{
		"aggregator:\n  oauth:\n    server:\n      dex: {clientSecrt: x}\n":                "aggregator.oauth.server.dex.clientSecrt (line 4): unknown key; did you mean clientSecret?",
		"aggregator:\n  oauth:\n    mcpClient: {enabled: true}\n":                          "aggregator.oauth.mcpClient.publicUrl: required when aggregator.oauth.mcpClient.enabled is true",
		"aggregator:\n  oauth:\n    server: {baseUrl: 'http://muster.example.com'}\n":      `aggregator.oauth.server.baseUrl: "http://muster.example.com" is not https: http is for a loopback host (localhost, 127.0.0.1, ::1) only`,
		"aggregator:\n  oauth:\n    server: {registrationTokenFile: /nonexistent/token}\n": "aggregator.oauth.server.registrationTokenFile: open /nonexistent/token: no such file or directory",
	} {
		dir := writeConfigYAML(t, content)
		_, _, err := parseDaemonFlags([]string{"-config-dir", dir}, io.Discard)
		require.Error(t, err, content)
		assert.Equal(t, "config file "+filepath.Join(dir, "config.yaml")+": "+want, err.Error())
	}
}

// core_config_get shows the OAuth section as read, in muster's shape, its
// secrets redacted.
func TestCoreConfigGetShowsTheOAuthSectionWithItsSecretsRedacted(t *testing.T) {
	cfg, _, err := parseDaemonFlags([]string{"-config-dir", writeConfigYAML(t, harnessConfig)}, io.Discard)
	require.NoError(t, err)
	data, err := json.Marshal(musterConfig(cfg))
	require.NoError(t, err)
	assert.NotContains(t, string(data), "dex-s3cr3t")
	var view struct {
		Aggregator struct {
			OAuth struct {
				MCPClient struct{ PublicURL, CallbackPath string }
				Server    struct {
					Enabled         bool
					SessionDuration string
					Dex             struct{ IssuerURL, ClientSecret string }
				}
			}
		}
	}
	require.NoError(t, json.Unmarshal(data, &view))
	o := view.Aggregator.OAuth
	assert.Equal(t, "http://localhost:21203", o.MCPClient.PublicURL)
	assert.Equal(t, "/oauth/proxy/callback", o.MCPClient.CallbackPath)
	assert.True(t, o.Server.Enabled)
	assert.Equal(t, "720h0m0s", o.Server.SessionDuration)
	assert.Equal(t, "https://localhost:40123", o.Server.Dex.IssuerURL)
	assert.Equal(t, "<redacted>", o.Server.Dex.ClientSecret)
}

// The real daemon: it starts on the harness's config (its server role
// off), core_config_get
// answers the section with its secrets (one given in place, one read from
// its file) redacted, and neither secret is in its debug log. A bad
// section stops it before it starts, exit code 2, the key named.
func TestE2ETheOAuthSectionIsShownRedactedAndABadOneStopsTheStart(t *testing.T) {
	dir := writeConfigYAML(t, "")
	tokenFile := filepath.Join(dir, "registration-token")
	require.NoError(t, os.WriteFile(tokenFile, []byte("reg-t0ken\n"), 0o600))
	content := strings.Replace(harnessConfig, "      storage:", "      registrationTokenFile: "+tokenFile+"\n      storage:", 1)
	// The server's role off: on, every MCP request would need a token of
	// the harness's provider, which does not run here (inbound.go's test
	// runs one).
	content = strings.Replace(content, "      enabled: true\n      provider: dex", "      enabled: false\n      provider: dex", 1)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "config.yaml"), []byte(content), 0o644))
	for _, sub := range []string{"mcpservers", "workflows"} {
		require.NoError(t, os.MkdirAll(filepath.Join(dir, sub), 0o755))
	}
	d := startDaemon(t, "-config-dir", dir, "-state-dir", t.TempDir(), "-log-level", "debug")
	d.waitReady(t)
	cs := d.directClient(t, nil)
	doc, isError := callJSON(t, cs, "core_config_get", nil)
	require.False(t, isError)
	server := doc["Aggregator"].(map[string]any)["OAuth"].(map[string]any)["Server"].(map[string]any)
	assert.Equal(t, "<redacted>", server["Dex"].(map[string]any)["ClientSecret"])
	assert.Equal(t, "<redacted>", server["RegistrationToken"])
	assert.Equal(t, tokenFile, server["RegistrationTokenFile"])
	text, _ := callTool(t, cs, "core_config_get", nil)
	log := d.stderr.String()
	for _, secret := range []string{"dex-s3cr3t", "reg-t0ken"} {
		assert.NotContains(t, text, secret)
		assert.NotContains(t, log, secret)
	}

	bad := writeConfigYAML(t, "aggregator:\n  oauth:\n    server: {enabled: true, provider: google, baseUrl: 'https://m.example.com'}\n")
	// Bounded: a daemon that took the bad section would run on.
	ctx, cancel := context.WithTimeout(context.Background(), e2eDeadline)
	defer cancel()
	out, err := exec.CommandContext(ctx, binary, "run", "-config-dir", bad, "-listen", "127.0.0.1:0").CombinedOutput()
	var exit *exec.ExitError
	require.ErrorAs(t, err, &exit, "%s", out)
	assert.Equal(t, 2, exit.ExitCode())
	assert.Contains(t, string(out), "aggregator.oauth.server.provider: google is not supported by musterd yet")
}

// A Valkey that cannot be reached at the start is an error naming it, and
// musterd does not start: it never falls back to keeping the users'
// tokens in memory, where a restart or a second replica would lose them.
func TestAnUnreachableValkeyStopsTheStart(t *testing.T) {
	closed := freeAddr(t) // nothing listens there
	dir := writeConfigYAML(t, fmt.Sprintf(`aggregator:
  oauth:
    server:
      enabled: true
      baseUrl: http://127.0.0.1:1
      dex: {issuerUrl: https://dex.invalid, clientId: musterd, clientSecret: s}
      storage: {type: valkey, valkey: {url: %s}}
      encryptionKey: %s
`, closed, base64.StdEncoding.EncodeToString(make([]byte, 32))))
	ctx, cancel := context.WithTimeout(context.Background(), e2eDeadline)
	defer cancel()
	out, err := exec.CommandContext(ctx, binary, "run", "-config-dir", dir, "-state-dir", t.TempDir(), "-listen", "127.0.0.1:0").CombinedOutput()
	var exit *exec.ExitError
	require.ErrorAs(t, err, &exit, "musterd ran on without its store: %s", out)
	assert.NotEqual(t, 0, exit.ExitCode())
	assert.Contains(t, string(out), "aggregator.oauth.server.storage.valkey")
	assert.Contains(t, string(out), closed, "the error names the address")
	assert.NotContains(t, string(out), "musterd starting")
}
