package fs

import (
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/musterd/musterd/internal/badinput"
	"github.com/musterd/musterd/pkg/bus"
	"github.com/musterd/musterd/pkg/events"
	"github.com/musterd/musterd/pkg/resources"
)

// maxBadInputAlloc bounds what reading and decoding one bad file may
// allocate in all: the 4 MiB read limit, and the decoder's refusal of alias
// bombs before expanding them, keep every case far below it. A decoder that
// expanded the bomb or read the whole 100 MB file would allocate gigabytes
// or hundreds of megabytes.
const maxBadInputAlloc = 64 << 20

// Every file of the bad corpus, and the hostile files made at test time (a
// 100 MB file, a symlink loop), read and decoded by the watcher: an
// error naming the file and its cause, no panic, and at most
// maxBadInputAlloc bytes allocated, as runtime.MemStats counts them (the
// total allocated bounds the peak heap's growth).
func TestEveryBadInputIsAnErrorNamingItsFileWithinBoundedMemory(t *testing.T) {
	want := badinput.Expectations(t)
	corpus := badinput.Dir(t)
	dir := t.TempDir()
	mcps := filepath.Join(dir, "mcpservers")
	require.NoError(t, os.MkdirAll(mcps, 0o755))
	entries, err := os.ReadDir(corpus)
	require.NoError(t, err)
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".yaml") {
			continue
		}
		_, listed := want[e.Name()]
		require.True(t, listed, "testdata/bad/%s has no line in errors.txt", e.Name())
		data, err := os.ReadFile(filepath.Join(corpus, e.Name()))
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(mcps, e.Name()), data, 0o644))
	}
	// Made here, never committed.
	maps.Copy(want, badinput.WriteGenerated(t, mcps))
	locked := filepath.Join(mcps, "locked.yaml")
	require.NoError(t, os.WriteFile(locked, []byte("kind: MCPServer\n"), 0o644))
	require.NoError(t, os.Chmod(locked, 0))
	want["locked.yaml"] = badinput.UnreadableError

	index := resources.New()
	w, err := New(bus.New(bus.Options{}), Options{ConfigDir: dir, Index: index, Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	for file, part := range want {
		t.Run(file, func(t *testing.T) {
			if file == "duplicate-identity.yaml" {
				t.Skip("one file alone is no duplicate: the index's check, in pkg/resources and cmd/musterd's end-to-end test")
			}
			if file == "locked.yaml" && os.Geteuid() == 0 {
				t.Skip("running as root, who reads a file whatever its mode; TestUnusableFilesAreErrorsNeverDeletes injects the EACCES instead")
			}
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			err := readAndDecode(t, w, index, "mcpservers/"+file)
			runtime.ReadMemStats(&after)
			allocated := after.TotalAlloc - before.TotalAlloc
			t.Logf("%s: %d KiB allocated: %v", file, allocated>>10, err)
			require.Error(t, err)
			assert.Contains(t, err.Error(), "mcpservers/"+file)
			assert.Contains(t, err.Error(), part)
			assert.Less(t, allocated, uint64(maxBadInputAlloc), "reading %s allocated %d MiB", file, allocated>>20)
		})
	}
}

// readAndDecode has a real watcher (not started: no fsnotify, no rescan)
// read rel as it does on an event, and returns the error the index then
// holds for rel's resource.
func readAndDecode(t *testing.T, w *Watcher, index *resources.Index, rel string) error {
	w.recheckFile(rel)
	e, ok := index.Get(events.NewKey("MCPServer", "", strings.TrimSuffix(filepath.Base(rel), ".yaml")))
	if !ok {
		t.Fatalf("%s: nothing in the index", rel)
	}
	return e.Err
}
