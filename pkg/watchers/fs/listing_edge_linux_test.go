//go:build linux

package fs

import (
	"bytes"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/fsnotify/fsnotify"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/musterd/musterd/pkg/bus"
	"github.com/musterd/musterd/pkg/resources"
)

// The getdents(2) listing (list_linux.go) against os.ReadDir, on random
// trees: the same names, byte for byte, and for each name the same file
// behind it (stamp, through symlinks, against os.Stat: a symlink to a
// directory is the directory, a dangling one an error in both). Some trees
// hold far more entries than one getdents buffer, so the listing's refills
// and record walking are covered; names are up to 255 bytes of any byte
// but '/' and NUL.
func TestDirentListingMatchesReadDir(t *testing.T) {
	for seed := range uint64(40) {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			t.Parallel()
			rng := rand.New(rand.NewPCG(seed, 0x6c697374))
			dir := t.TempDir()
			n := rng.IntN(60)
			if seed%4 == 0 {
				n = 1500 + rng.IntN(1500) // several buffers' worth
			}
			nameBytes := makeRandomTree(t, rng, dir, n)
			if seed%4 == 0 {
				require.Greater(t, nameBytes, direntBufSize, "the tree's names alone overflow one buffer")
			}

			assertListingMatchesReadDir(t, dir)
		})
	}
}

// assertListingMatchesReadDir lists dir with the getdents listing and
// with os.ReadDir: the same names, byte for byte, and behind each name the
// same file (its stamp against os.Stat).
func assertListingMatchesReadDir(t *testing.T, dir string) {
	t.Helper()
	want, err := os.ReadDir(dir)
	require.NoError(t, err)
	l, err := (&Watcher{}).openListing(dir)
	require.NoError(t, err)
	defer l.close()
	var got []string
	for name, ok := l.next(); ok; name, ok = l.next() {
		got = append(got, string(name))
		stamp, serr := l.stamp(name)
		info, oerr := os.Stat(filepath.Join(dir, string(name)))
		if oerr != nil {
			assert.Error(t, serr, "%q: os.Stat fails with %v", name, oerr)
			continue
		}
		require.NoError(t, serr, "%q", name)
		st := info.Sys().(*syscall.Stat_t)
		assert.Equal(t, uint64(st.Ino), stamp.ino, "%q: inode", name)
		assert.Equal(t, uint64(st.Dev), stamp.dev, "%q: device", name)
		assert.Equal(t, info.Size(), stamp.size, "%q: size", name)
		assert.Equal(t, info.ModTime().UnixNano(), stamp.mtime, "%q: mtime", name)
	}
	require.NoError(t, l.err())
	assert.False(t, l.moved())
	slices.Sort(got)
	var names []string
	for _, e := range want {
		names = append(names, e.Name())
	}
	assert.Equal(t, names, got)
}

// makeRandomTree fills dir with n entries of random names and kinds: files
// of random sizes, subdirectories with a file in them, symlinks to files,
// to directories and to nothing. It returns the bytes of the names.
func makeRandomTree(t *testing.T, rng *rand.Rand, dir string, n int) int {
	t.Helper()
	var made []string
	total := 0
	for len(made) < n {
		name := randomName(rng)
		if name == "." || name == ".." || slices.Contains(made, name) {
			continue
		}
		p := filepath.Join(dir, name)
		switch k := rng.IntN(10); {
		case k < 5:
			require.NoError(t, os.WriteFile(p, bytes.Repeat([]byte{'x'}, rng.IntN(100)), 0o644))
		case k < 7:
			require.NoError(t, os.Mkdir(p, 0o755))
			require.NoError(t, os.WriteFile(filepath.Join(p, "inner.yaml"), []byte("x"), 0o644))
		case k < 9 && len(made) > 0:
			require.NoError(t, os.Symlink(made[rng.IntN(len(made))], p))
		default:
			require.NoError(t, os.Symlink("nowhere-"+fmt.Sprint(len(made)), p))
		}
		made = append(made, name)
		total += len(name)
	}
	return total
}

// randomName is 1 to 255 bytes: mostly printable, sometimes any byte but
// '/' and NUL (newlines, non-UTF-8, a leading dash), sometimes a
// definition file's extension.
func randomName(rng *rand.Rand) string {
	var n int
	switch rng.IntN(4) {
	case 0:
		n = 200 + rng.IntN(56)
	default:
		n = 1 + rng.IntN(40)
	}
	b := make([]byte, n)
	odd := rng.IntN(3) == 0
	for i := range b {
		if odd {
			b[i] = byte(1 + rng.IntN(255))
			if b[i] == '/' {
				b[i] = '-'
			}
		} else {
			b[i] = "abcdefghijklmnopqrstuvwxyz0123456789-_. "[rng.IntN(40)]
		}
	}
	if rng.IntN(2) == 0 && n > 5 {
		copy(b[n-5:], ".yaml")
	}
	return string(b)
}

// scanWatcher is a watcher of dir whose scans the test calls itself, with
// every stamp kept (so that unchanged files are not read again), and a hook
// into each listing that the scans open.
type scanWatcher struct {
	*Watcher
	index    *resources.Index
	listings int
	// hook, if set, is called before every next and stamp of a listing,
	// with the listing's number (from 1), the how-manieth next it is (0
	// for a stamp), and the name being stamped.
	hook func(listing, next int, name string)
}

func newScanWatcher(t *testing.T, dir string) *scanWatcher {
	t.Helper()
	b := bus.New(bus.Options{})
	b.Start()
	t.Cleanup(b.Close)
	index := resources.New()
	w, err := New(b, Options{ConfigDir: dir, Index: index, Decode: decode, Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	w.racy = 0
	sw := &scanWatcher{Watcher: w, index: index}
	open := w.openDir
	w.openDir = func(rel string) (dirListing, error) {
		l, err := open(rel)
		if err != nil {
			return nil, err
		}
		sw.listings++
		return &hookedListing{dirListing: l, sw: sw, listing: sw.listings}, nil
	}
	return sw
}

type hookedListing struct {
	dirListing
	sw      *scanWatcher
	listing int
	nexts   int
}

func (l *hookedListing) next() ([]byte, bool) {
	l.nexts++
	if l.sw.hook != nil {
		l.sw.hook(l.listing, l.nexts, "")
	}
	return l.dirListing.next()
}

func (l *hookedListing) stamp(name []byte) (fileStamp, error) {
	if l.sw.hook != nil {
		l.sw.hook(l.listing, 0, string(name))
	}
	return l.dirListing.stamp(name)
}

// hashes is what the index holds: file → the hashes of its resources.
func (sw *scanWatcher) hashes() map[string]string {
	out := map[string]string{}
	for _, f := range sw.index.Files() {
		var hs []string
		for _, k := range sw.index.FileKeys(f) {
			hs = append(hs, sw.index.Hash(k))
		}
		out[f] = strings.Join(hs, ",")
	}
	return out
}

// A kind directory replaced by rename while a scan lists it (the listing
// has opened the old one, and holds its entries): the scan ends with what
// the path names now, not with the old directory's files counted as
// unchanged beside none of the new one's. See listing.go for why.
func TestAKindDirectoryReplacedWhileListedIsListedAgain(t *testing.T) {
	dir := t.TempDir()
	kind := filepath.Join(dir, "workflows")
	write(t, filepath.Join(kind, "a.yaml"), wf("a", "v1"))
	write(t, filepath.Join(kind, "b.yaml"), wf("b", "v1"))
	sw := newScanWatcher(t, dir)
	require.True(t, sw.scanDir("workflows", false))
	require.Equal(t, []string{"workflows/a.yaml", "workflows/b.yaml"}, sw.index.Files())

	next := filepath.Join(dir, "workflows.new")
	write(t, filepath.Join(next, "c.yaml"), wf("c", "v1"))
	write(t, filepath.Join(next, "b.yaml"), wf("b", "v2"))
	first := sw.listings + 1
	sw.hook = func(listing, n int, _ string) {
		if listing == first && n == 2 { // mid-listing: one entry handed out
			require.NoError(t, os.Rename(kind, filepath.Join(dir, "workflows.old")))
			require.NoError(t, os.Rename(next, kind))
		}
	}
	require.True(t, sw.scanDir("workflows", false))
	assert.Equal(t, map[string]string{
		"workflows/b.yaml": hashOf(wf("b", "v2")),
		"workflows/c.yaml": hashOf(wf("c", "v1")),
	}, sw.hashes())
	assert.Empty(t, sw.work.dirs, "the scan saw the new directory: nothing left to do")
}

// A kind directory swapped at every listing of a scan: the scan cannot
// tell what it holds, so the index keeps its last good state, and the scan
// asks for the directory again after the next quiet.
func TestAKindDirectorySwappedAtEveryListingKeepsItsLastStateAndIsScannedAgain(t *testing.T) {
	dir := t.TempDir()
	kind := filepath.Join(dir, "workflows")
	write(t, filepath.Join(kind, "a.yaml"), wf("a", "v1"))
	sw := newScanWatcher(t, dir)
	require.True(t, sw.scanDir("workflows", false))
	before := sw.hashes()

	gen := 0
	sw.hook = func(_, n int, _ string) {
		if n == 1 {
			gen++
			other := filepath.Join(dir, fmt.Sprint("workflows.", gen))
			write(t, filepath.Join(other, fmt.Sprint("g", gen, ".yaml")), wf(fmt.Sprint("g", gen), "v1"))
			require.NoError(t, os.Rename(kind, filepath.Join(dir, fmt.Sprint("workflows.old.", gen))))
			require.NoError(t, os.Rename(other, kind))
		}
	}
	assert.False(t, sw.scanDir("workflows", false))
	assert.Equal(t, maxListings, gen)
	assert.Equal(t, before, sw.hashes(), "last good state kept")
	assert.True(t, sw.work.dirs["workflows"], "the directory is to be scanned again")

	sw.hook = nil
	w := sw.Watcher
	w.work = pending{}
	require.True(t, w.scanDir("workflows", false))
	assert.Equal(t, map[string]string{fmt.Sprint("workflows/g", gen, ".yaml"): hashOf(wf(fmt.Sprint("g", gen), "v1"))}, sw.hashes())
}

// A file replaced (by rename, with its old size and modification time)
// between the listing that named it and the stat of it is read again: its
// stamp is taken after the replace, and a new inode is a new stamp, though
// size and modification time are the old ones. One removed there is found gone.
func TestAFileReplacedBetweenListingAndStatIsReadAgain(t *testing.T) {
	dir := t.TempDir()
	kind := filepath.Join(dir, "workflows")
	write(t, filepath.Join(kind, "a.yaml"), wf("a", "v1"))
	write(t, filepath.Join(kind, "b.yaml"), wf("b", "v1"))
	old := time.Now().Add(-time.Hour)
	require.NoError(t, os.Chtimes(filepath.Join(kind, "a.yaml"), old, old))
	sw := newScanWatcher(t, dir)
	require.True(t, sw.scanDir("workflows", false))

	sw.hook = func(_, n int, name string) {
		switch {
		case n == 0 && name == "a.yaml":
			writeByRename(t, filepath.Join(kind, "a.yaml"), wf("a", "v2")) // same size
			require.NoError(t, os.Chtimes(filepath.Join(kind, "a.yaml"), old, old))
		case n == 0 && name == "b.yaml":
			require.NoError(t, os.Remove(filepath.Join(kind, "b.yaml")))
		}
	}
	require.True(t, sw.scanDir("workflows", false))
	assert.Equal(t, map[string]string{"workflows/a.yaml": hashOf(wf("a", "v2"))}, sw.hashes())
}

// Names at the limits of what a directory holds: 255 bytes, bytes that
// are not UTF-8, a newline, a leading dash, a space. Each is listed,
// read and indexed under its own name.
func TestOddNamesAreListedAndIndexed(t *testing.T) {
	dir := t.TempDir()
	kind := filepath.Join(dir, "workflows")
	names := []string{
		strings.Repeat("n", 250) + ".yaml",
		"\xff\xfe\x80.yaml",
		"new\nline.yaml",
		"-dash.yaml",
		"--.yml",
		" space .yaml",
		"tab\there.yaml",
		"ünïcödé.yaml",
	}
	want := map[string]string{}
	for i, name := range names {
		require.LessOrEqual(t, len(name), 255)
		content := wf(fmt.Sprint("w", i), "v1")
		write(t, filepath.Join(kind, name), content)
		want["workflows/"+name] = hashOf(content)
	}
	write(t, filepath.Join(kind, ".-hidden.yaml"), wf("hidden", "v1"))
	sw := newScanWatcher(t, dir)
	require.True(t, sw.scanDir("workflows", false))
	assert.Equal(t, want, sw.hashes())
	// And a rescan finds them all unchanged, by their stamps.
	sw.listings = 0
	require.True(t, sw.scanDir("workflows", false))
	assert.Equal(t, want, sw.hashes())
	assert.Equal(t, 1, sw.listings, "no second listing: every file was found")
}

// A kind directory removed while a scan lists it (before the listing's
// first entry, and after it, with more entries than one buffer holds, so
// that getdents is called again on a directory that is gone): no crash, no
// error left over; the directory is gone, so it declares nothing, as when
// it is found gone by a scan that starts after it went.
func TestAKindDirectoryRemovedWhileListedDeclaresNothing(t *testing.T) {
	for _, at := range []int{1, 2, 500} {
		t.Run(fmt.Sprint("at next ", at), func(t *testing.T) {
			dir := t.TempDir()
			kind := filepath.Join(dir, "workflows")
			for i := range 1200 {
				name := fmt.Sprintf("%s%04d", strings.Repeat("w", 40), i)
				write(t, filepath.Join(kind, name+".yaml"), wf(name, "v1"))
			}
			sw := newScanWatcher(t, dir)
			require.True(t, sw.scanDir("workflows", false))
			require.Len(t, sw.index.Files(), 1200)

			first := sw.listings + 1
			sw.hook = func(listing, n int, _ string) {
				if listing == first && n == at {
					require.NoError(t, os.RemoveAll(kind))
				}
			}
			assert.True(t, sw.scanDir("workflows", false), "a directory that is gone tells what it holds: nothing")
			assert.Empty(t, sw.index.Files())
			assert.Empty(t, sw.stamps)
			assert.Empty(t, sw.work.dirs)
		})
	}
}

// A scan that gave up on a directory swapped at every listing looks again
// once it is quiet, with no further event to prompt it: the swaps' own
// events may all have come before the scan.
func TestADirectorySwappedAtEveryListingIsScannedAgainAfterQuiet(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		dir := t.TempDir()
		kind := filepath.Join(dir, "workflows")
		write(t, filepath.Join(kind, "a.yaml"), wf("a", "v1"))
		h := newHarness(t, dir, Options{})
		swaps := 0
		open := h.w.openDir
		h.w.openDir = func(rel string) (dirListing, error) {
			l, err := open(rel)
			if err == nil && swaps > 0 { // the path names another directory once opened
				swaps--
				other := filepath.Join(dir, fmt.Sprint("workflows.", swaps))
				write(t, filepath.Join(other, fmt.Sprint("g", swaps, ".yaml")), wf(fmt.Sprint("g", swaps), "v1"))
				require.NoError(t, os.Rename(kind, other+".old"))
				require.NoError(t, os.Rename(other, kind))
			}
			return l, err
		}
		fsEvents, stop := runInBubble(h)
		defer stop()
		m := h.mark()

		swaps = maxListings
		fsEvents <- fsnotify.Event{Name: kind, Op: fsnotify.Create}
		time.Sleep(settleDelay)
		synctest.Wait()
		assert.Zero(t, swaps)
		assert.Empty(t, h.since(m), "the swapped directory changed nothing")

		time.Sleep(settleDelay)
		synctest.Wait()
		assert.ElementsMatch(t, []string{"delete Workflow/default/a", "create Workflow/default/g0"}, summary(h.since(m)))
	})
}
