package badinput

import (
	"bufio"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// UnreadableError is a part of the error of a definition file its reader
// has no permission to read. Only the tests make such a file, each with
// content of its own.
const UnreadableError = "cannot read: permission denied"

// hugeSize is the size of the generated huge.yaml: far above the watcher's
// 4 MiB read limit.
const hugeSize = 100 << 20

// Dir returns the corpus directory, testdata/bad at the module's root,
// found from the test's working directory.
func Dir(t testing.TB) string {
	t.Helper()
	dir, err := os.Getwd()
	require.NoError(t, err)
	for {
		corpus := filepath.Join(dir, "testdata", "bad")
		if _, err := os.Stat(filepath.Join(corpus, "errors.txt")); err == nil {
			return corpus
		}
		parent := filepath.Dir(dir)
		require.NotEqual(t, dir, parent, "badinput: no testdata/bad/errors.txt above the working directory")
		dir = parent
	}
}

// Expectations reads the corpus's errors.txt: each file of the corpus and
// a part of the error its resource must show after "mcpservers/<file>:".
func Expectations(t testing.TB) map[string]string {
	t.Helper()
	f, err := os.Open(filepath.Join(Dir(t), "errors.txt"))
	require.NoError(t, err)
	defer f.Close()
	want := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		file, part, ok := strings.Cut(line, ": ")
		require.True(t, ok, "errors.txt: %q is not <file>: <error part>", line)
		want[file] = part
	}
	require.NoError(t, sc.Err())
	return want
}

// WriteGenerated makes in dir the hostile files too large or too strange
// to commit: huge.yaml, an MCPServer of 100 MB, and loop.yaml, a symlink
// to itself. It returns each file with a part of its error.
func WriteGenerated(t testing.TB, dir string) map[string]string {
	t.Helper()
	huge, err := os.Create(filepath.Join(dir, "huge.yaml"))
	require.NoError(t, err)
	_, err = huge.WriteString("apiVersion: muster.giantswarm.io/v1alpha1\nkind: MCPServer\nmetadata:\n  name: huge\nspec:\n  description: ")
	require.NoError(t, err)
	chunk := []byte(strings.Repeat("x", 1<<20))
	for range hugeSize / len(chunk) {
		_, err = huge.Write(chunk)
		require.NoError(t, err)
	}
	require.NoError(t, huge.Close())
	require.NoError(t, os.Symlink("loop.yaml", filepath.Join(dir, "loop.yaml")))
	return map[string]string{
		"huge.yaml": "cannot read: larger than 4 MiB; definition files are small",
		"loop.yaml": "cannot read: too many levels of symbolic links",
	}
}
