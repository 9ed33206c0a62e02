//go:build linux

package fs

import (
	"fmt"
	"log/slog"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/musterd/musterd/pkg/bus"
	"github.com/musterd/musterd/pkg/resources"
)

// A rescan that finds every file unchanged makes next to no garbage per
// file: the listing's names are read into a buffer the watcher keeps and
// stat(2)'s copy of a name is all it allocates. Listing by name would make
// hundreds of bytes a file, once a minute, in a daemon at rest (listing.go). Bytes
// allocated are counted, not timed; the least of three rescans is taken,
// so that a runtime goroutine's allocation does not count.
func TestARescanOfUnchangedFilesMakesNextToNoGarbagePerFile(t *testing.T) {
	dir := t.TempDir()
	const n = 2000
	for i := range n {
		name := fmt.Sprintf("wf%05d", i)
		write(t, filepath.Join(dir, "workflows", name+".yaml"), wf(name, "v1"))
	}
	b := bus.New(bus.Options{})
	b.Start()
	defer b.Close()
	index := resources.New()
	w, err := New(b, Options{ConfigDir: dir, Index: index, Decode: decode, Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	w.racy = 0 // every stamp is kept
	require.True(t, w.scanDir("workflows", false))
	require.Len(t, index.Files(), n)
	require.Len(t, w.stamps, n)

	least := ^uint64(0)
	for range 3 {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		require.True(t, w.scanDir("workflows", false))
		runtime.ReadMemStats(&after)
		least = min(least, after.TotalAlloc-before.TotalAlloc)
	}
	t.Logf("%d bytes a file", least/n)
	assert.LessOrEqual(t, least, uint64(32*n), "bytes allocated by a rescan of %d unchanged files", n)
	assert.Len(t, index.Files(), n)
}
