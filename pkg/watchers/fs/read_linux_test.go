package fs

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// readDefinition reads what a file holds whatever fstat said of its size:
// exactly the size (the one read it stops after), nothing, up to the
// limit, past it, and more than fstat said (a file of /proc, whose size is
// 0: the buffer is filled and grown until the end).
func TestReadDefinitionReadsWhatTheFileHoldsWhateverItsSize(t *testing.T) {
	dir := t.TempDir()
	for _, size := range []int{0, 1, 4095, 4096, 70_000, maxFileSize} {
		path := filepath.Join(dir, "f.yaml")
		want := bytes.Repeat([]byte("abcdefg\n"), size/8+1)[:size]
		require.NoError(t, os.WriteFile(path, want, 0o644))
		got, stamp, err := readDefinition(path)
		require.NoError(t, err, size)
		assert.Equal(t, want, got, size)
		assert.Equal(t, int64(size), stamp.size, size)
		assert.NotZero(t, stamp.ino, size)
	}

	path := filepath.Join(dir, "big.yaml")
	require.NoError(t, os.WriteFile(path, make([]byte, maxFileSize+1), 0o644))
	_, _, err := readDefinition(path)
	assert.EqualError(t, err, "read "+path+": larger than 4 MiB; definition files are small")

	info, err := os.Stat("/proc/self/mountinfo")
	require.NoError(t, err)
	require.Zero(t, info.Size(), "a file of /proc has no size")
	got, _, err := readDefinition("/proc/self/mountinfo")
	require.NoError(t, err)
	assert.Contains(t, string(got), " / ", "the root's mount, read past the size fstat gave")

	_, _, err = readDefinition(filepath.Join(dir, "missing.yaml"))
	assert.ErrorIs(t, err, os.ErrNotExist)
	var pathErr *os.PathError
	require.ErrorAs(t, err, &pathErr)
	assert.Equal(t, "open", pathErr.Op)
}
