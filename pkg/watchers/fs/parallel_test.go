package fs

import (
	"fmt"
	"path/filepath"
	"runtime"
	"testing"

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
