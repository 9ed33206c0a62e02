package fs

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/musterd/musterd/pkg/events"
)

// A listing larger than readChunk is read on several goroutines; what it
// publishes is what reading the files one after another publishes: every
// resource in the listing's order, the broken and the empty file as
// errors naming them, and IndexSynchronized after all of them. GOMAXPROCS
// is raised for the test (so it is not parallel): with one P, recheckFiles
// reads one file after another and the test would not test the workers.
func TestALargeListingPublishesInTheListingsOrder(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(4))
	dir := t.TempDir()
	const n = readChunk*2 + 7
	var want []string
	for i := range n {
		name := fmt.Sprintf("wf%04d", i)
		switch i {
		case readChunk - 1:
			write(t, filepath.Join(dir, "workflows", name+".yaml"), "not a definition\n")
		case readChunk + 3:
			write(t, filepath.Join(dir, "workflows", name+".yaml"), "")
		default:
			write(t, filepath.Join(dir, "workflows", name+".yaml"), wf(name, "v1"))
		}
		want = append(want, "create Workflow/default/"+name)
	}
	h := newHarness(t, dir, Options{}).start()

	assert.Equal(t, want, summary(h.since(0)), "os.ReadDir lists the files sorted; events follow that order")
	h.mu.Lock()
	last := h.log[len(h.log)-1]
	h.mu.Unlock()
	assert.Equal(t, "IndexSynchronized:filesystem", last)
	broken, _ := h.index.Get(wfKey(fmt.Sprintf("wf%04d", readChunk-1)))
	require.Error(t, broken.Err)
	assert.Contains(t, broken.Err.Error(), fmt.Sprintf("workflows/wf%04d.yaml", readChunk-1))
	empty, _ := h.index.Get(wfKey(fmt.Sprintf("wf%04d", readChunk+3)))
	assert.EqualError(t, empty.Err, fmt.Sprintf("workflows/wf%04d.yaml is empty; a definition file declares at least one document (delete the file to delete its resources)", readChunk+3))
	good, _ := h.index.Get(events.NewKey("Workflow", "", "wf0000"))
	assert.Equal(t, "v1", good.Object)
}

// Rescans of a listing of several chunks, each read while the one before
// it is applied, read only the files whose stamps changed: a chunk's
// stamps are taken before the chunk ahead of it is applied, which changes
// only its own files' stamps. Two files replaced in the first and the last
// chunk are read again, once, and published; no other file is read again,
// and the rescans after read nothing more. The watcher runs without
// watches, so that only the rescans see the changes: with the real
// fsnotify, whose watch a rescan restores, an event could be read long
// after the rescans that published the change, and under load the test
// counted its read and the next rescan's.
func TestRescansOfALargeListingReadOnlyTheChangedFiles(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(4))
	dir := t.TempDir()
	const n = readChunk*2 + 7
	name := func(i int) string { return fmt.Sprintf("wf%04d", i) }
	for i := range n {
		write(t, filepath.Join(dir, "workflows", name(i)+".yaml"), wf(name(i), "v1"))
	}
	h := newHarness(t, dir, Options{RescanInterval: 20 * time.Millisecond})
	h.w.racy = 0 // every stamp is kept: a change is a new inode
	listings := h.countListings("workflows")
	reads := h.countReads()
	h.startRescansOnly()

	h.rescans(listings, 3)
	for i := range n {
		require.Equal(t, 1, reads()["workflows/"+name(i)+".yaml"], "%s read at the listing only", name(i))
	}

	m := h.mark()
	first, last := name(3), name(n-2)
	for _, changed := range []string{first, last} { // replaced whole, so that no read finds one half written
		tmp := filepath.Join(dir, "workflows", "."+changed+".tmp")
		write(t, tmp, wf(changed, "v2"))
		require.NoError(t, os.Rename(tmp, filepath.Join(dir, "workflows", changed+".yaml")))
	}
	h.eventually("both changes published", func() bool { return len(h.since(m)) >= 2 })
	published := summary(h.quiet(m))
	ofTheListing := func() map[string]int {
		all := reads()
		got := map[string]int{}
		for i := range n {
			got[name(i)] = all["workflows/"+name(i)+".yaml"]
		}
		return got
	}
	h.rescans(listings, 1)
	settled := ofTheListing()
	h.rescans(listings, 3)
	assert.Equal(t, settled, ofTheListing(), "the new stamps are kept")
	for i := range n {
		if name(i) == first || name(i) == last {
			assert.Equal(t, 2, settled[name(i)], "%s changed: read once more", name(i))
		} else {
			assert.Equal(t, 1, settled[name(i)], "%s unchanged: not read again", name(i))
		}
	}
	assert.ElementsMatch(t, []string{"update Workflow/default/" + first, "update Workflow/default/" + last}, published)
}
