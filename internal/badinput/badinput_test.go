package badinput_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/musterd/musterd/internal/badinput"
)

// Every YAML file of the corpus has its line in errors.txt, and every line
// names a file of the corpus.
func TestEveryCorpusFileHasAnExpectationAndEveryExpectationAFile(t *testing.T) {
	want := badinput.Expectations(t)
	entries, err := os.ReadDir(badinput.Dir(t))
	require.NoError(t, err)
	files := map[string]bool{}
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".yaml") {
			files[e.Name()] = true
			assert.Contains(t, want, e.Name(), "testdata/bad/%s has no line in errors.txt", e.Name())
		}
	}
	for file, part := range want {
		assert.True(t, files[file], "errors.txt names %s, which is not in testdata/bad", file)
		assert.NotEmpty(t, part, file)
	}
	assert.Equal(t, "12: aliases expand to more than 10000 values (an alias bomb?)", want["yaml-bomb.yaml"])
}

func TestWriteGeneratedMakesAHugeFileAndASymlinkLoop(t *testing.T) {
	dir := t.TempDir()
	want := badinput.WriteGenerated(t, dir)
	assert.Len(t, want, 2)
	info, err := os.Stat(filepath.Join(dir, "huge.yaml"))
	require.NoError(t, err)
	assert.Greater(t, info.Size(), int64(100<<20))
	_, err = os.ReadFile(filepath.Join(dir, "loop.yaml"))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "too many levels of symbolic links")
}
