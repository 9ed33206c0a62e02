package main

import (
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// -extra-ca-file must name a readable file holding a PEM certificate:
// anything else is an error naming the flag, never a silent "trust
// nothing more".
func TestExtraCAFileMustHoldACertificate(t *testing.T) {
	dir := t.TempDir()
	cfg, _, err := parseDaemonFlags([]string{"-config-dir", dir}, io.Discard)
	require.NoError(t, err)
	assert.Nil(t, cfg.extraCAs, "no file, no pool of musterd's")

	_, _, err = parseDaemonFlags([]string{"-config-dir", dir, "-extra-ca-file", filepath.Join(dir, "missing.pem")}, io.Discard)
	assert.ErrorContains(t, err, "-extra-ca-file: open ")

	notPEM := filepath.Join(dir, "not.pem")
	require.NoError(t, os.WriteFile(notPEM, []byte("not a certificate\n"), 0o600))
	_, _, err = parseDaemonFlags([]string{"-config-dir", dir, "-extra-ca-file", notPEM}, io.Discard)
	assert.ErrorContains(t, err, "-extra-ca-file "+notPEM+": no PEM certificate in it")
}

// OAuth guards a listener off loopback as the static token does: with
// aggregator.oauth.server on, -allow-remote needs no static token.
func TestOAuthGuardsARemoteListener(t *testing.T) {
	dir := t.TempDir()
	_, _, err := parseDaemonFlags([]string{"-config-dir", dir, "-listen", "0.0.0.0:0", "-allow-remote"}, io.Discard)
	assert.ErrorContains(t, err, "no API token is set")
	require.NoError(t, os.WriteFile(filepath.Join(dir, "config.yaml"), []byte(`aggregator:
  oauth:
    server:
      enabled: true
      baseUrl: https://musterd.example.com
      dex: {issuerUrl: https://dex.example.com, clientId: musterd, clientSecret: s}
`), 0o600))
	_, _, err = parseDaemonFlags([]string{"-config-dir", dir, "-listen", "0.0.0.0:0", "-allow-remote"}, io.Discard)
	assert.NoError(t, err)
}
