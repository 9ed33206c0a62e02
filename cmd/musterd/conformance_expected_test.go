package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The list of expected conformance differences reads one
// "scenario/check: cause" a line, comments and blank lines aside; a
// malformed line or a check listed twice is an error naming the file and
// line, never a difference silently expected.
func TestTheExpectedConformanceDifferencesAreReadStrictly(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		path := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(path, []byte(content), 0o600))
		return path
	}
	got, err := readExpected(write("good.txt", "# a comment\n\n  # another\nscen/check-a: a cause: with a colon\nscen/check-b:   spaced  \n"))
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"scen/check-a": "a cause: with a colon", "scen/check-b": "spaced"}, got)

	for name, content := range map[string]string{
		"nocause.txt":   "# c\nscen/check:\n",
		"nocheck.txt":   "scen: cause\n",
		"nocolon.txt":   "scen/check cause\n",
		"twice.txt":     "scen/check: one\nscen/check: two\n",
		"emptyname.txt": "/check: cause\n",
	} {
		_, err := readExpected(write(name, content))
		require.Error(t, err, name)
		assert.Contains(t, err.Error(), filepath.Join(dir, name)+":", name)
	}
	_, err = readExpected(filepath.Join(dir, "missing.txt"))
	assert.Error(t, err)

	listed, err := readExpected(expected2026File)
	require.NoError(t, err, "the list the conformance test reads")
	assert.NotEmpty(t, listed)
}
