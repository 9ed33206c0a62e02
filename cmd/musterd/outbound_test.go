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
