package fs

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/fsnotify/fsnotify"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// These tests pin the watcher's timing with virtual time. fsnotify cannot
// run in a synctest bubble (its reader blocks in a system call), so the
// test plays fsnotify: it changes the real files and sends the events.

// noWatches stands in for fsnotify's watch list.
type noWatches struct{}

func (noWatches) Add(string) error    { return nil }
func (noWatches) Remove(string) error { return nil }

// runInBubble runs h's watcher on fake fsnotify channels until stop is
// called, and waits for its initial listing.
func runInBubble(h *harness) (fsEvents chan<- fsnotify.Event, stop func()) {
	h.record()
	evs := make(chan fsnotify.Event)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- h.w.run(ctx, noWatches{}, evs, make(chan error)) }()
	synctest.Wait()
	require.Len(h.t, h.synced(), 1)
	return evs, func() {
		cancel()
		require.NoError(h.t, <-done)
		h.bus.Close()
	}
}

// watchOneFile puts content in mcpservers/<file> of a fresh config
// directory, runs a watcher with default options on it in the bubble until
// the test ends, and returns the mark of the changes after the initial
// listing.
func watchOneFile(t *testing.T, file, content string) (h *harness, path string, fsEvents chan<- fsnotify.Event, m int) {
	t.Helper()
	dir := t.TempDir()
	path = filepath.Join(dir, "mcpservers", file)
	write(t, path, content)
	h = newHarness(t, dir, Options{})
	fsEvents, stop := runInBubble(h)
	t.Cleanup(stop) // cleanups run inside the bubble
	return h, path, fsEvents, h.mark()
}

func TestAValidFileIsReadAtItsFirstEvent(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h, path, fsEvents, m := watchOneFile(t, "git.yaml", mcp("git", "v1"))

		time.Sleep(time.Second) // a quiet system
		write(t, path, mcp("git", "v2"))
		fsEvents <- fsnotify.Event{Name: path, Op: fsnotify.Write}
		at := time.Now()
		synctest.Wait()
		changes := h.since(m)
		require.Equal(t, []string{"update MCPServer/default/git"}, summary(changes), "read with no delay")
		assert.Equal(t, at.UTC(), changes[0].Time)
		assert.Equal(t, hashOf(mcp("git", "v2")), changes[0].ContentHash)

		time.Sleep(settleDelay)
		synctest.Wait()
		assert.Len(t, h.since(m), 1, "the quiet after the burst reads nothing more")
	})
}

func TestATruncateFollowedByAWriteIsReadOnceAtTheWrite(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h, path, fsEvents, m := watchOneFile(t, "git.yaml", mcp("git", "v1"))

		// A writer truncates, is held up for 30 ms, then writes.
		write(t, path, "")
		fsEvents <- fsnotify.Event{Name: path, Op: fsnotify.Write}
		time.Sleep(30 * time.Millisecond)
		synctest.Wait()
		assert.Empty(t, h.since(m), "the empty instant is never published")
		e, _ := h.index.Get(mcpKey("git"))
		assert.NoError(t, e.Err, "nor recorded as an error")

		write(t, path, mcp("git", "v2"))
		fsEvents <- fsnotify.Event{Name: path, Op: fsnotify.Write}
		write := time.Now()
		synctest.Wait()
		changes := h.since(m)
		require.Equal(t, []string{"update MCPServer/default/git"}, summary(changes), "the write is read at once")
		assert.Equal(t, hashOf(mcp("git", "v2")), changes[0].ContentHash)
		assert.Equal(t, write.UTC(), changes[0].Time)

		time.Sleep(settleDelay)
		synctest.Wait()
		assert.Len(t, h.since(m), 1, "the quiet reads nothing more")
	})
}

func TestAHalfWrittenFileNeverTurnsItsResourceToErrorAndABrokenOneDoesOnceQuiet(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h, path, fsEvents, m := watchOneFile(t, "git.yaml", mcp("git", "v1"))

		// Half of the new text, which does not decode, then the rest.
		full := mcp("git", "v2")
		half := full[:strings.Index(full, "spec")+3] // the last line is "spe"
		write(t, path, half)
		fsEvents <- fsnotify.Event{Name: path, Op: fsnotify.Write}
		time.Sleep(settleDelay - time.Nanosecond)
		synctest.Wait()
		e, _ := h.index.Get(mcpKey("git"))
		require.NoError(t, e.Err, "a file that may still be being written is no error yet")
		assert.Empty(t, h.since(m))
		write(t, path, full)
		fsEvents <- fsnotify.Event{Name: path, Op: fsnotify.Write}
		synctest.Wait()
		require.Equal(t, []string{"update MCPServer/default/git"}, summary(h.since(m)))
		assert.Equal(t, hashOf(full), h.since(m)[0].ContentHash)

		// A file left broken is an error settleDelay after its last event,
		// and the last good definition stays in force.
		time.Sleep(time.Second)
		m = h.mark()
		write(t, path, half)
		fsEvents <- fsnotify.Event{Name: path, Op: fsnotify.Write}
		broken := time.Now()
		time.Sleep(settleDelay - time.Nanosecond)
		synctest.Wait()
		assert.Empty(t, h.since(m))
		time.Sleep(time.Nanosecond)
		synctest.Wait()
		changes := h.since(m)
		require.Len(t, changes, 1)
		assert.Equal(t, broken.Add(settleDelay).UTC(), changes[0].Time)
		e, _ = h.index.Get(mcpKey("git"))
		require.Error(t, e.Err)
		assert.Contains(t, e.Err.Error(), "mcpservers/git.yaml")
		assert.Equal(t, "v2", e.Object, "the last good definition stays")
	})
}

func TestAMultiDocumentFileCaughtHalfWrittenIsNoDelete(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h, path, fsEvents, m := watchOneFile(t, "all.yaml", mcp("git", "v1")+"---\n"+mcp("fs", "v1"))

		// The writer has written the first document only, which decodes.
		write(t, path, mcp("git", "v2"))
		fsEvents <- fsnotify.Event{Name: path, Op: fsnotify.Write}
		time.Sleep(settleDelay - time.Nanosecond)
		synctest.Wait()
		assert.Empty(t, h.since(m), "no delete of fs, and no half of the file, while it may still be written")

		write(t, path, mcp("git", "v2")+"---\n"+mcp("fs", "v1"))
		fsEvents <- fsnotify.Event{Name: path, Op: fsnotify.Write}
		synctest.Wait()
		require.Equal(t, []string{"update MCPServer/default/git"}, summary(h.since(m)), "the whole file, read at once")

		// A file that keeps declaring less does delete, once quiet.
		time.Sleep(time.Second)
		m = h.mark()
		write(t, path, mcp("git", "v2"))
		fsEvents <- fsnotify.Event{Name: path, Op: fsnotify.Write}
		quiet := time.Now().Add(settleDelay)
		time.Sleep(settleDelay)
		synctest.Wait()
		changes := h.since(m)
		require.Equal(t, []string{"delete MCPServer/default/fs"}, summary(changes))
		assert.Equal(t, quiet.UTC(), changes[0].Time)
	})
}

func TestAFileRewrittenWithoutPauseIsReadAtOnceThenMaxSettleAfterItsFirstEvent(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h, path, fsEvents, m := watchOneFile(t, "git.yaml", mcp("git", "v0"))

		first := time.Now()
		const every = settleDelay * 4 / 5
		var last string
		for i := 1; time.Since(first) < maxSettle; i++ {
			last = mcp("git", fmt.Sprint("v", i))
			write(t, path, last)
			fsEvents <- fsnotify.Event{Name: path, Op: fsnotify.Write}
			time.Sleep(every)
			synctest.Wait()
			if time.Since(first) < maxSettle {
				require.Len(t, h.since(m), 1, "read at the first event, then not before maxSettle (at %v)", time.Since(first))
			}
		}
		synctest.Wait()
		changes := h.since(m)
		require.Equal(t, []string{"update MCPServer/default/git", "update MCPServer/default/git"}, summary(changes))
		assert.Equal(t, first.UTC(), changes[0].Time)
		assert.Equal(t, hashOf(mcp("git", "v1")), changes[0].ContentHash)
		assert.Equal(t, first.Add(maxSettle).UTC(), changes[1].Time)
		assert.Equal(t, hashOf(last), changes[1].ContentHash, "what the file held then")
	})
}

func TestThePeriodicRescanRunsEveryIntervalAndPublishesOnlyDifferences(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		dir := t.TempDir()
		path := filepath.Join(dir, "mcpservers", "git.yaml")
		write(t, path, mcp("git", "v1"))
		h := newHarness(t, dir, Options{RescanInterval: time.Minute})
		listings := h.countListings("mcpservers")
		start := time.Now()
		_, stop := runInBubble(h)
		defer stop()
		m := h.mark()
		require.EqualValues(t, 1, listings.Load(), "the initial listing")

		// A change no event reports.
		write(t, path, mcp("git", "v2"))
		time.Sleep(time.Minute - time.Nanosecond)
		synctest.Wait()
		assert.EqualValues(t, 1, listings.Load())
		assert.Empty(t, h.since(m))

		time.Sleep(time.Nanosecond)
		synctest.Wait()
		assert.EqualValues(t, 2, listings.Load())
		changes := h.since(m)
		require.Equal(t, []string{"update MCPServer/default/git"}, summary(changes))
		assert.Equal(t, start.Add(time.Minute).UTC(), changes[0].Time)

		time.Sleep(2 * time.Minute)
		synctest.Wait()
		assert.EqualValues(t, 4, listings.Load())
		assert.Len(t, h.since(m), 1, "rescans of unchanged files publish nothing")
	})
}

// A buffered writer puts a file down in 4 KiB writes; its first write may
// decode (a spec cut short) while more is coming. A file of such a size
// waits for quiet, so the part is never in force; the whole file is read
// once quiet.
func TestAFileCaughtAtABufferedWritersChunkWaitsForQuiet(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h, path, fsEvents, m := watchOneFile(t, "git.yaml", mcp("git", "v1"))

		full := mcp("git", strings.Repeat("x", 5000))
		write(t, path, full[:writeChunk]) // decodes: "spec: xxx…" cut short
		fsEvents <- fsnotify.Event{Name: path, Op: fsnotify.Write}
		synctest.Wait()
		assert.Empty(t, h.since(m), "a chunk-sized file is not read at once")
		write(t, path, full)
		fsEvents <- fsnotify.Event{Name: path, Op: fsnotify.Write}
		time.Sleep(settleDelay)
		synctest.Wait()
		require.Equal(t, []string{"update MCPServer/default/git"}, summary(h.since(m)))
		assert.Equal(t, hashOf(full), h.since(m)[0].ContentHash, "only the whole file was ever in force")
	})
}
