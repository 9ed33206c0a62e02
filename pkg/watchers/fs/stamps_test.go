package fs

import (
	"maps"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/musterd/musterd/pkg/events"
)

// countReads counts the reads of each file.
func (h *harness) countReads() func() map[string]int {
	var mu sync.Mutex
	reads := map[string]int{}
	readFile := h.w.readFile
	h.w.readFile = func(rel string) ([]byte, fileStamp, error) {
		mu.Lock()
		reads[rel]++
		mu.Unlock()
		return readFile(rel)
	}
	return func() map[string]int {
		mu.Lock()
		defer mu.Unlock()
		return maps.Clone(reads)
	}
}

func TestRescansReadOnlyTheFilesWhoseStampChanged(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	mcps := filepath.Join(dir, "mcpservers")
	for _, name := range []string{"a", "b", "c"} {
		write(t, filepath.Join(mcps, name+".yaml"), mcp(name, "v1"))
	}
	write(t, filepath.Join(mcps, "broken.yaml"), "not: [a definition\n")
	h := newHarness(t, dir, Options{RescanInterval: 20 * time.Millisecond})
	h.w.racy = 0 // every stamp is kept: the files' clock ticks are the test's to make
	listings := h.countListings("mcpservers")
	reads := h.countReads()
	h.start()
	require.NoError(t, h.fsnotify().Remove(mcps)) // only the rescans see changes now

	h.rescans(listings, 3)
	assert.Equal(t, map[string]int{"mcpservers/a.yaml": 1, "mcpservers/b.yaml": 1, "mcpservers/c.yaml": 1, "mcpservers/broken.yaml": 1},
		reads(), "read at the listing only, the broken file too")

	// Changes, seen by events too, since the rescans watch the directory
	// again: the events read what they name, and the rescans read no more
	// once the changed files' new stamps are kept.
	m := h.mark()
	h.write(filepath.Join(mcps, "b.yaml"), mcp("b", "v2")) // the same size: its times tell
	replaced := filepath.Join(mcps, ".c.yaml.tmp")
	write(t, replaced, mcp("c", "v1"))
	require.NoError(t, os.Rename(replaced, filepath.Join(mcps, "c.yaml"))) // the same bytes, another inode
	h.waitChange(m, events.OperationUpdate, mcpKey("b"), hashOf(mcp("b", "v2")))
	h.eventually("c read again", func() bool { return reads()["mcpservers/c.yaml"] > 1 })
	h.quiet(m)
	settled := reads()
	h.rescans(listings, 3)
	assert.Equal(t, settled, reads())
	assert.Equal(t, 1, settled["mcpservers/a.yaml"])
	assert.Equal(t, 1, settled["mcpservers/broken.yaml"])
	assert.Equal(t, []string{"update MCPServer/default/b"}, summary(h.quiet(m)), "c's new inode holds what it held")

	m = h.mark()
	require.NoError(t, os.Remove(filepath.Join(mcps, "a.yaml")))
	h.eventually("a deleted", func() bool {
		_, ok := h.w.index.Get(mcpKey("a"))
		return !ok
	})
	write(t, filepath.Join(mcps, "a.yaml"), mcp("a", "v1"))
	h.waitChange(m, events.OperationCreate, mcpKey("a"), hashOf(mcp("a", "v1")))
}

func TestAFileChangedWithinTheRacyMarginIsReadAtEveryRescan(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	mcps := filepath.Join(dir, "mcpservers")
	write(t, filepath.Join(mcps, "a.yaml"), mcp("a", "v1"))
	h := newHarness(t, dir, Options{RescanInterval: 20 * time.Millisecond})
	h.w.racy = time.Hour // a write in the same tick as the last could leave the same stamp
	listings := h.countListings("mcpservers")
	reads := h.countReads()
	h.start()
	h.rescans(listings, 3)
	assert.GreaterOrEqual(t, reads()["mcpservers/a.yaml"], 1+3, "the initial listing's read, and one at each rescan")
}

func TestStampKeepable(t *testing.T) {
	now := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	old := now.Add(-time.Minute).UnixNano()
	s := fileStamp{ino: 7, size: 10, mtime: old, ctime: old}
	assert.True(t, s.keepable(now, racyMargin))
	for name, racy := range map[string]fileStamp{
		"modified within the margin": {ino: 7, mtime: now.Add(-time.Second).UnixNano(), ctime: old},
		"changed within the margin":  {ino: 7, mtime: old, ctime: now.Add(-time.Second).UnixNano()},
		"no stamp from the system":   {mtime: old, ctime: old},
	} {
		assert.False(t, racy.keepable(now, racyMargin), name)
	}
}

// A rescan that finds most files unchanged still finds the one that is
// gone: it counts the index's files against those it listed (listing.go),
// and lists by name only when they differ. The watcher runs without
// watches, so that only the rescans see the changes.
func TestARescanFindsTheFileGoneAmongUnchangedOnes(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	mcps := filepath.Join(dir, "mcpservers")
	for _, name := range []string{"a", "b", "c", "d"} {
		write(t, filepath.Join(mcps, name+".yaml"), mcp(name, "v1"))
	}
	h := newHarness(t, dir, Options{RescanInterval: 20 * time.Millisecond})
	h.w.racy = 0 // every stamp is kept, so the rescans find the files unchanged
	listings := h.countListings("mcpservers")
	h.startRescansOnly()
	h.rescans(listings, 2)

	m := h.mark()
	require.NoError(t, os.Remove(filepath.Join(mcps, "b.yaml")))
	h.waitChange(m, events.OperationDelete, mcpKey("b"), "")
	assert.Equal(t, []string{"delete MCPServer/default/b"}, summary(h.quiet(m)))

	// One gone and one new in the same rescan: as many files as before.
	m = h.mark()
	h.edit(func() {
		require.NoError(t, os.Remove(filepath.Join(mcps, "c.yaml")))
		write(t, filepath.Join(mcps, "e.yaml"), mcp("e", "v1"))
	})
	h.waitChange(m, events.OperationDelete, mcpKey("c"), "")
	assert.ElementsMatch(t, []string{"delete MCPServer/default/c", "create MCPServer/default/e"}, summary(h.quiet(m)))
	assert.Equal(t, []string{"mcpservers/a.yaml", "mcpservers/d.yaml", "mcpservers/e.yaml", "workflows/zz-marker.yaml"}, h.index.Files(),
		"quiet's marker beside")
}
