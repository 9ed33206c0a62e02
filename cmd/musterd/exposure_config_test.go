package main

import (
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// muster's aggregator.musterPrefix set to "" is no global prefix (muster
// reads it as "x"); absent, the prefix is "x".
func TestAnEmptyMusterPrefixInConfigYAMLIsNoPrefix(t *testing.T) {
	write := func(content string) string {
		dir := t.TempDir()
		require.NoError(t, os.WriteFile(filepath.Join(dir, "config.yaml"), []byte(content), 0o644))
		return dir
	}
	cfg, _, err := parseDaemonFlags([]string{"-config-dir", write("aggregator:\n  musterPrefix: \"\"\n")}, io.Discard)
	require.NoError(t, err)
	assert.Equal(t, "", cfg.toolPrefix)
	cfg, _, err = parseDaemonFlags([]string{"-config-dir", write("aggregator:\n  port: 9190\n")}, io.Discard)
	require.NoError(t, err)
	assert.Equal(t, "x", cfg.toolPrefix)
}
