package fs

import (
	"context"
	"errors"
	"fmt"
	iofs "io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/fsnotify/fsnotify"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/musterd/musterd/pkg/bus"
	"github.com/musterd/musterd/pkg/events"
	"github.com/musterd/musterd/pkg/resources"
)

func TestNewRequiresItsOptionsAndFillsDefaults(t *testing.T) {
	b := bus.New(bus.Options{})
	ix := resources.New()
	valid := Options{ConfigDir: t.TempDir(), Index: ix, Decode: decode}
	for name, tc := range map[string]struct {
		bus  *bus.Bus
		opts func(*Options)
		want string
	}{
		"nil bus":     {opts: func(*Options) {}, want: "nil bus"},
		"no dir":      {bus: b, opts: func(o *Options) { o.ConfigDir = "" }, want: "ConfigDir is required"},
		"no index":    {bus: b, opts: func(o *Options) { o.Index = nil }, want: "Index is required"},
		"no kinds":    {bus: b, opts: func(o *Options) { o.Kinds = map[string]string{} }, want: "Kinds is empty"},
		"nested kind": {bus: b, opts: func(o *Options) { o.Kinds = map[string]string{"a/b": "X"} }, want: `Kinds["a/b"]`},
		"hidden kind": {bus: b, opts: func(o *Options) { o.Kinds = map[string]string{".x": "X"} }, want: `Kinds[".x"]`},
		"empty kind":  {bus: b, opts: func(o *Options) { o.Kinds = map[string]string{"x": ""} }, want: `Kinds["x"]`},
	} {
		t.Run(name, func(t *testing.T) {
			opts := valid
			tc.opts(&opts)
			_, err := New(tc.bus, opts)
			require.ErrorContains(t, err, tc.want)
		})
	}

	w, err := New(b, valid)
	require.NoError(t, err)
	assert.Equal(t, "fs-watcher", w.Name())
	assert.Equal(t, map[string]string{"mcpservers": "MCPServer", "workflows": "Workflow"}, w.kinds)
	assert.Equal(t, DefaultRescanInterval, w.interval)
	opts := valid
	opts.RescanInterval = -1
	w, err = New(b, opts)
	require.NoError(t, err)
	assert.Zero(t, w.interval, "a negative interval disables the periodic rescan")
}

func TestIsDefinitionFile(t *testing.T) {
	for _, name := range []string{"git.yaml", "git.yml", "a.b.yaml", "4913.yaml"} {
		assert.True(t, isDefinitionFile(name), name)
	}
	for _, name := range []string{
		".git.yaml", ".#git.yaml", "git.yaml~", ".git.yaml.swp", "4913", "#git.yaml#",
		"git.yaml.tmp", "git.yaml.bak", "git.json", ".yaml", "..data", "..2026_11_21_10_00_00.123",
	} {
		assert.False(t, isDefinitionFile(name), name)
	}
}

func TestInitialListingPublishesEveryResourceAndThenIndexSynchronized(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write(t, filepath.Join(dir, "mcpservers", "git.yaml"), mcp("git", "v1"))
	write(t, filepath.Join(dir, "mcpservers", "fs.yml"), mcp("fs", "v1"))
	write(t, filepath.Join(dir, "workflows", "deploy.yaml"), wf("deploy", "v1"))
	// None of these is a definition, though each would decode as one.
	for _, name := range []string{
		"mcpservers/.hidden.yaml", "mcpservers/.#git.yaml", "mcpservers/git.yaml~", "mcpservers/.git.yaml.swp",
		"mcpservers/4913", "mcpservers/#git.yaml#", "mcpservers/nested/deep.yaml", "config.yaml",
		"status/mcpserver/git.yaml", "other/x.yaml",
	} {
		write(t, filepath.Join(dir, name), mcp("ignored", "v1"))
	}

	h := newHarness(t, dir, Options{}).start()

	h.mu.Lock()
	log := h.log
	h.mu.Unlock()
	assert.Equal(t, []string{"ResourceChanged", "ResourceChanged", "ResourceChanged", "IndexSynchronized:filesystem"}, log,
		"every resource of the listing comes before the one IndexSynchronized")
	assert.ElementsMatch(t, []string{"create MCPServer/default/git", "create MCPServer/default/fs", "create Workflow/default/deploy"}, summary(h.since(0)))
	assert.Equal(t, []string{"mcpservers/fs.yml", "mcpservers/git.yaml", "workflows/deploy.yaml"}, h.index.Files())

	var git events.ResourceChanged
	for _, e := range h.since(0) {
		if e.Key == mcpKey("git") {
			git = e
		}
	}
	assert.Equal(t, events.SourceFilesystem, git.Source)
	assert.Equal(t, "mcpservers/git.yaml", git.FilePath, "paths are relative to the config dir")
	assert.Equal(t, hashOf(mcp("git", "v1")), git.ContentHash)
	assert.NotEmpty(t, git.CorrelationID)
	assert.False(t, git.Time.IsZero())

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	assert.ErrorContains(t, h.w.Start(ctx), "already started")
}

func TestCreateUpdateDeleteInPlace(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "mcpservers"), 0o755))
	h := newHarness(t, dir, Options{}).start()
	require.Empty(t, h.since(0))
	path := filepath.Join(dir, "mcpservers", "git.yaml")

	m := h.mark()
	h.write(path, mcp("git", "v1"))
	h.waitChange(m, events.OperationCreate, mcpKey("git"), hashOf(mcp("git", "v1")))
	h.write(path, mcp("git", "v2"))
	h.waitChange(m, events.OperationUpdate, mcpKey("git"), hashOf(mcp("git", "v2")))
	e, _ := h.index.Get(mcpKey("git"))
	assert.Equal(t, "v2", e.Object)
	require.NoError(t, os.Remove(path))
	h.waitChange(m, events.OperationDelete, mcpKey("git"), "")

	assert.Equal(t, []string{"create MCPServer/default/git", "update MCPServer/default/git", "delete MCPServer/default/git"}, summary(h.quiet(m)))
	_, ok := h.index.Get(mcpKey("git"))
	assert.False(t, ok)
	assert.Equal(t, []string{"workflows/zz-marker.yaml"}, h.index.Files())
}

func TestEditorSavesConvergeOnWhatIsOnDisk(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	mcps := filepath.Join(dir, "mcpservers")
	path := filepath.Join(mcps, "git.yaml")
	write(t, path, mcp("git", "v1"))
	h := newHarness(t, dir, Options{}).start()

	{ // a temp file renamed over the original
		m := h.mark()
		writeByRename(t, path, mcp("git", "v2"))
		h.waitChange(m, events.OperationUpdate, mcpKey("git"), hashOf(mcp("git", "v2")))
		assert.Equal(t, []string{"update MCPServer/default/git"}, summary(h.quiet(m)))
	}
	{ // vim: probe file, backup by rename, write anew, drop the backup
		m := h.mark()
		h.edit(func() {
			write(t, filepath.Join(mcps, "4913"), "")
			require.NoError(t, os.Remove(filepath.Join(mcps, "4913")))
			write(t, filepath.Join(mcps, ".git.yaml.swp"), "swap")
			require.NoError(t, os.Rename(path, path+"~"))
			write(t, path, mcp("git", "v3"))
			require.NoError(t, os.Remove(path+"~"))
			require.NoError(t, os.Remove(filepath.Join(mcps, ".git.yaml.swp")))
		})
		h.waitChange(m, events.OperationUpdate, mcpKey("git"), hashOf(mcp("git", "v3")))
		assert.Equal(t, []string{"update MCPServer/default/git"}, summary(h.quiet(m)),
			"the rename away is not taken for a delete: the file is read again and found")
		assert.Equal(t, []string{"mcpservers/git.yaml", "workflows/zz-marker.yaml"}, h.index.Files(), "no swap, backup or probe file is taken for a definition")
	}
	{ // delete and recreate
		m := h.mark()
		h.edit(func() {
			require.NoError(t, os.Remove(path))
			write(t, path, mcp("git", "v4"))
		})
		h.waitChange(m, events.OperationUpdate, mcpKey("git"), hashOf(mcp("git", "v4")))
		assert.Equal(t, []string{"update MCPServer/default/git"}, summary(h.quiet(m)))
	}
}

func TestRewritingTheSameContentPublishesNothing(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "mcpservers", "git.yaml")
	write(t, path, mcp("git", "v1"))
	h := newHarness(t, dir, Options{}).start()
	h.quiet(0) // the marker's creation: from here on the system is settled

	m := h.mark()
	h.write(path, mcp("git", "v1"))
	writeByRename(t, path, mcp("git", "v1"))
	require.NoError(t, os.Chmod(path, 0o600))
	now := time.Now()
	require.NoError(t, os.Chtimes(path, now, now))
	h.edit(func() {
		require.NoError(t, os.Remove(path))
		write(t, path, mcp("git", "v1"))
	})
	assert.Empty(t, h.quiet(m))
}

func TestStatusWritesInsideTheConfigDirTriggerNothing(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write(t, filepath.Join(dir, "mcpservers", "git.yaml"), mcp("git", "v1"))
	h := newHarness(t, dir, Options{})
	listings := h.countListings("")
	h.start()
	h.quiet(0)
	before := listings.Load()

	// The state dir defaults to the config dir: status lands beside the
	// kind directories, and is rewritten on every reconcile.
	m := h.mark()
	for round := range 5 {
		for i := range 40 {
			for _, kind := range []string{"mcpserver", "workflow"} {
				p := filepath.Join(dir, "status", kind, fmt.Sprintf("s%d.yaml", i))
				h.write(p, mcp(fmt.Sprintf("s%d", i), fmt.Sprint("round", round)))
			}
		}
	}
	h.write(filepath.Join(dir, "config.yaml"), "aggregator: {}\n")
	assert.Empty(t, h.quiet(m))
	assert.Equal(t, before, listings.Load(), "not even a rescan")
	assert.Equal(t, []string{"mcpservers/git.yaml", "workflows/zz-marker.yaml"}, h.index.Files())
}

func TestConfigMapMountedAtAKindDirectory(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cm := newConfigMapVolume(t, filepath.Join(dir, "mcpservers"))
	cm.update(map[string]string{"git.yaml": mcp("git", "v1"), "fs.yaml": mcp("fs", "v1")})
	h := newHarness(t, dir, Options{}).start()
	assert.ElementsMatch(t, []string{"create MCPServer/default/git", "create MCPServer/default/fs"}, summary(h.since(0)))
	assert.Equal(t, []string{"mcpservers/fs.yaml", "mcpservers/git.yaml"}, h.index.Files(), "..data and the timestamped directory are not definitions")

	m := h.mark()
	cm.update(map[string]string{"git.yaml": mcp("git", "v2"), "new.yaml": mcp("new", "v1")})
	h.waitChange(m, events.OperationUpdate, mcpKey("git"), hashOf(mcp("git", "v2")))
	assert.ElementsMatch(t, []string{"update MCPServer/default/git", "delete MCPServer/default/fs", "create MCPServer/default/new"}, summary(h.quiet(m)))

	m = h.mark()
	cm.update(map[string]string{"git.yaml": mcp("git", "v3"), "new.yaml": mcp("new", "v1")})
	h.waitChange(m, events.OperationUpdate, mcpKey("git"), hashOf(mcp("git", "v3")))
	assert.Equal(t, []string{"update MCPServer/default/git"}, summary(h.quiet(m)), "the unchanged key publishes nothing")
}

func TestConfigMapMountedAtTheConfigDirectory(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "muster")
	cm := newConfigMapVolume(t, dir)
	cm.update(map[string]string{"mcpservers/git.yaml": mcp("git", "v1"), "workflows/deploy.yaml": wf("deploy", "v1")})
	h := newHarness(t, dir, Options{}).start()
	assert.ElementsMatch(t, []string{"create MCPServer/default/git", "create Workflow/default/deploy"}, summary(h.since(0)))

	m := h.mark()
	cm.update(map[string]string{"mcpservers/git.yaml": mcp("git", "v2"), "workflows/build.yaml": wf("build", "v1")})
	h.waitChange(m, events.OperationUpdate, mcpKey("git"), hashOf(mcp("git", "v2")))
	h.waitChange(m, events.OperationDelete, wfKey("deploy"), "")
	h.waitChange(m, events.OperationCreate, wfKey("build"), hashOf(wf("build", "v1")))

	// The kind directories now resolve to the new timestamped directory; a
	// change there is seen only if the watches followed the swap.
	m = h.mark()
	h.write(filepath.Join(dir, cm.ts, "mcpservers", "git.yaml"), mcp("git", "v3"))
	h.waitChange(m, events.OperationUpdate, mcpKey("git"), hashOf(mcp("git", "v3")))

	m = h.mark()
	cm.update(map[string]string{"mcpservers/git.yaml": mcp("git", "v4")})
	h.waitChange(m, events.OperationUpdate, mcpKey("git"), hashOf(mcp("git", "v4")))
	h.waitChange(m, events.OperationDelete, wfKey("build"), "")
	assert.Equal(t, []string{"mcpservers/git.yaml"}, h.index.Files())
}

func TestTheConfigDirAppearsLaterAndIsRemovedAndRecreated(t *testing.T) {
	t.Parallel()
	base := t.TempDir()
	dir := filepath.Join(base, "home", ".config", "muster")
	h := newHarness(t, dir, Options{}).start()
	assert.Empty(t, h.since(0), "a missing config dir is an empty listing")
	assert.Len(t, h.synced(), 1)

	m := h.mark()
	h.write(filepath.Join(dir, "mcpservers", "git.yaml"), mcp("git", "v1"))
	h.waitChange(m, events.OperationCreate, mcpKey("git"), hashOf(mcp("git", "v1")))
	h.write(filepath.Join(dir, "workflows", "deploy.yaml"), wf("deploy", "v1"))
	h.waitChange(m, events.OperationCreate, wfKey("deploy"), hashOf(wf("deploy", "v1")))
	assert.Equal(t, []string{"create MCPServer/default/git", "create Workflow/default/deploy"}, summary(h.quiet(m)))

	m = h.mark()
	require.NoError(t, os.RemoveAll(filepath.Join(base, "home")))
	h.waitChange(m, events.OperationDelete, mcpKey("git"), "")
	h.waitChange(m, events.OperationDelete, wfKey("deploy"), "")
	h.waitChange(m, events.OperationDelete, marker, "")
	assert.Empty(t, h.index.Files())

	m = h.mark()
	h.write(filepath.Join(dir, "mcpservers", "git.yaml"), mcp("git", "v2"))
	h.waitChange(m, events.OperationCreate, mcpKey("git"), hashOf(mcp("git", "v2")))
	assert.Len(t, h.synced(), 1, "IndexSynchronized is published once")
}

func TestAConfigDirReplacedInOneStepIsWatchedAgain(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "muster")
	write(t, filepath.Join(dir, "mcpservers", "git.yaml"), mcp("git", "v1"))
	h := newHarness(t, dir, Options{}).start()

	// fsnotify drops the watches of the removed directories; the new ones,
	// at the same paths, must be watched afresh.
	m := h.mark()
	h.edit(func() {
		require.NoError(t, os.RemoveAll(dir))
		write(t, filepath.Join(dir, "mcpservers", "git.yaml"), mcp("git", "v2"))
	})
	h.waitChange(m, events.OperationUpdate, mcpKey("git"), hashOf(mcp("git", "v2")))
	h.write(filepath.Join(dir, "mcpservers", "fs.yaml"), mcp("fs", "v1"))
	h.waitChange(m, events.OperationCreate, mcpKey("fs"), hashOf(mcp("fs", "v1")))
	h.write(filepath.Join(dir, "workflows", "deploy.yaml"), wf("deploy", "v1"))
	h.waitChange(m, events.OperationCreate, wfKey("deploy"), hashOf(wf("deploy", "v1")))
	assert.Equal(t, []string{"update MCPServer/default/git", "create MCPServer/default/fs", "create Workflow/default/deploy"}, summary(h.quiet(m)))
}

func TestAKindDirectoryRemovedRenamedAndRecreated(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	mcps := filepath.Join(dir, "mcpservers")
	write(t, filepath.Join(mcps, "git.yaml"), mcp("git", "v1"))
	write(t, filepath.Join(mcps, "fs.yaml"), mcp("fs", "v1"))
	write(t, filepath.Join(dir, "workflows", "deploy.yaml"), wf("deploy", "v1"))
	h := newHarness(t, dir, Options{}).start()

	m := h.mark()
	require.NoError(t, os.Rename(mcps, mcps+".bak"))
	h.waitChange(m, events.OperationDelete, mcpKey("git"), "")
	assert.ElementsMatch(t, []string{"delete MCPServer/default/git", "delete MCPServer/default/fs"}, summary(h.quiet(m)), "the other kind directory is untouched")

	m = h.mark()
	require.NoError(t, os.Rename(mcps+".bak", mcps))
	h.waitChange(m, events.OperationCreate, mcpKey("git"), hashOf(mcp("git", "v1")))
	assert.ElementsMatch(t, []string{"create MCPServer/default/git", "create MCPServer/default/fs"}, summary(h.quiet(m)))

	m = h.mark()
	require.NoError(t, os.RemoveAll(mcps))
	h.waitChange(m, events.OperationDelete, mcpKey("git"), "")
	h.waitChange(m, events.OperationDelete, mcpKey("fs"), "")

	m = h.mark()
	h.write(filepath.Join(mcps, "git.yaml"), mcp("git", "v2"))
	h.waitChange(m, events.OperationCreate, mcpKey("git"), hashOf(mcp("git", "v2")))
	// The recreated directory is watched: a later change inside it is seen.
	h.write(filepath.Join(mcps, "git.yaml"), mcp("git", "v3"))
	h.waitChange(m, events.OperationUpdate, mcpKey("git"), hashOf(mcp("git", "v3")))
	assert.Equal(t, []string{"mcpservers/git.yaml", "workflows/deploy.yaml", "workflows/zz-marker.yaml"}, h.index.Files())
}

func TestADirectoryThatCannotBeListedDeletesNothing(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write(t, filepath.Join(dir, "mcpservers", "git.yaml"), mcp("git", "v1"))
	h := newHarness(t, dir, Options{})
	// The listing of mcpservers fails with failWith while it is set: at
	// once, or after its first entry.
	type failure struct {
		err     error
		entries int // listed before the failure; -1 fails the open
	}
	var failWith atomic.Pointer[failure]
	var failures atomic.Int64
	openDir := h.w.openDir
	h.w.openDir = func(rel string) (dirListing, error) {
		f := failWith.Load()
		if f == nil || rel != "mcpservers" {
			return openDir(rel)
		}
		failures.Add(1)
		if f.entries < 0 {
			return nil, f.err
		}
		l, err := openDir(rel)
		if err != nil {
			return nil, err
		}
		return &failingListing{dirListing: l, entries: f.entries, failure: f.err}, nil
	}
	h.start()
	h.quiet(0)
	// Another file, so that a listing cut short after one entry leaves
	// one out, whichever it lists first.
	m := h.mark()
	h.write(filepath.Join(dir, "mcpservers", "fs.yaml"), mcp("fs", "v1"))
	h.waitChange(m, events.OperationCreate, mcpKey("fs"), hashOf(mcp("fs", "v1")))
	h.quiet(m)

	for i, f := range []failure{
		{&iofs.PathError{Op: "open", Path: filepath.Join(dir, "mcpservers"), Err: syscall.EIO}, -1},
		// A listing that claims the directory is gone while it is there:
		// the second look finds it, so nothing is deleted.
		{&iofs.PathError{Op: "open", Path: filepath.Join(dir, "mcpservers"), Err: syscall.ENOENT}, -1},
		// A listing that fails part way: what it did not list is not gone.
		{&iofs.PathError{Op: "readdirent", Path: filepath.Join(dir, "mcpservers"), Err: syscall.EIO}, 1},
	} {
		m := h.mark()
		failWith.Store(&f)
		h.fsnotify().Errors <- fsnotify.ErrEventOverflow // a full rescan
		h.eventually("the failed listing", func() bool { return failures.Load() > int64(i) })
		assert.Empty(t, h.quiet(m), "%v", f.err)
		for _, name := range []string{"git", "fs"} {
			e, ok := h.index.Get(mcpKey(name))
			require.True(t, ok, "%s after %v", name, f.err)
			assert.Equal(t, "v1", e.Object)
		}
	}

	// Single files are still read while their directory cannot be listed.
	m = h.mark()
	h.write(filepath.Join(dir, "mcpservers", "git.yaml"), mcp("git", "v2"))
	h.waitChange(m, events.OperationUpdate, mcpKey("git"), hashOf(mcp("git", "v2")))
}

func TestAnOverflowRescansEverything(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	mcps := filepath.Join(dir, "mcpservers")
	write(t, filepath.Join(mcps, "git.yaml"), mcp("git", "v1"))
	write(t, filepath.Join(mcps, "fs.yaml"), mcp("fs", "v1"))
	h := newHarness(t, dir, Options{}).start()
	h.quiet(0)

	// Changes fsnotify does not report, as if its queue had overflowed.
	require.NoError(t, h.fsnotify().Remove(mcps))
	m := h.mark()
	h.write(filepath.Join(mcps, "git.yaml"), mcp("git", "v2"))
	require.NoError(t, os.Remove(filepath.Join(mcps, "fs.yaml")))
	h.write(filepath.Join(mcps, "new.yaml"), mcp("new", "v1"))
	assert.Empty(t, h.quiet(m), "the changes went unseen")

	h.fsnotify().Errors <- fsnotify.ErrEventOverflow
	h.waitChange(m, events.OperationUpdate, mcpKey("git"), hashOf(mcp("git", "v2")))
	assert.ElementsMatch(t, []string{"update MCPServer/default/git", "delete MCPServer/default/fs", "create MCPServer/default/new"}, summary(h.quiet(m)))

	// The rescan re-established the watch.
	m = h.mark()
	h.write(filepath.Join(mcps, "git.yaml"), mcp("git", "v3"))
	h.waitChange(m, events.OperationUpdate, mcpKey("git"), hashOf(mcp("git", "v3")))
}

func TestThePeriodicRescanCatchesWhatFsnotifyMissed(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	mcps := filepath.Join(dir, "mcpservers")
	write(t, filepath.Join(mcps, "git.yaml"), mcp("git", "v1"))
	h := newHarness(t, dir, Options{RescanInterval: 20 * time.Millisecond})
	listings := h.countListings("mcpservers")
	h.start()
	require.NoError(t, h.fsnotify().Remove(mcps))

	m := h.mark()
	h.write(filepath.Join(mcps, "git.yaml"), mcp("git", "v2"))
	h.waitChange(m, events.OperationUpdate, mcpKey("git"), hashOf(mcp("git", "v2")))
	h.rescans(listings, 3)
	assert.Equal(t, []string{"update MCPServer/default/git"}, summary(h.quiet(m)), "rescans publish only real differences")
}

func TestUnusableFilesAreErrorsNeverDeletes(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	mcps := filepath.Join(dir, "mcpservers")
	write(t, filepath.Join(mcps, "git.yaml"), mcp("git", "v1"))
	write(t, filepath.Join(mcps, "locked.yaml"), mcp("locked", "v1"))
	h := newHarness(t, dir, Options{})
	var denied atomic.Bool
	readFile := h.w.readFile
	h.w.readFile = func(rel string) ([]byte, fileStamp, error) {
		if rel == "mcpservers/locked.yaml" && denied.Load() {
			return nil, fileStamp{}, &iofs.PathError{Op: "open", Path: filepath.Join(dir, rel), Err: syscall.EACCES}
		}
		return readFile(rel)
	}
	h.start()

	{ // permission denied
		m := h.mark()
		denied.Store(true)
		h.write(filepath.Join(mcps, "locked.yaml"), mcp("locked", "v2"))
		e := h.waitEntry(mcpKey("locked"), "shows the read error", func(e resources.Entry, _ bool) bool { return e.Err != nil })
		assert.EqualError(t, e.Err, "mcpservers/locked.yaml: cannot read: permission denied")
		assert.ErrorIs(t, e.Err, syscall.EACCES)
		assert.Equal(t, "v1", e.Object, "the last good definition stays")
		assert.Equal(t, []string{"update MCPServer/default/locked"}, summary(h.quiet(m)))
	}
	if os.Geteuid() == 0 {
		t.Log("running as root, who reads files whatever their mode: the injected error above stands in for chmod 000")
	} else { // permission denied by the filesystem
		path := filepath.Join(mcps, "secret.yaml")
		h.write(path, mcp("secret", "v1"))
		require.NoError(t, os.Chmod(path, 0))
		e := h.waitEntry(mcpKey("secret"), "shows the read error", func(e resources.Entry, ok bool) bool { return ok && e.Err != nil })
		assert.ErrorIs(t, e.Err, syscall.EACCES)
	}
	{ // a symlink loop replaces a good file
		m := h.mark()
		path := filepath.Join(mcps, "git.yaml")
		require.NoError(t, os.Symlink("git.yaml", path+".new"))
		require.NoError(t, os.Rename(path+".new", path))
		e := h.waitEntry(mcpKey("git"), "shows the loop", func(e resources.Entry, _ bool) bool { return e.Err != nil })
		assert.ErrorIs(t, e.Err, syscall.ELOOP)
		assert.Equal(t, "v1", e.Object)
		assert.Equal(t, []string{"update MCPServer/default/git"}, summary(h.quiet(m)))
	}
	{ // a directory named like a definition
		m := h.mark()
		require.NoError(t, os.Mkdir(filepath.Join(mcps, "dir.yaml"), 0o755))
		e := h.waitEntry(mcpKey("dir"), "shows the error under the name's key", func(_ resources.Entry, ok bool) bool { return ok })
		assert.ErrorIs(t, e.Err, syscall.EISDIR)
		assert.Equal(t, []string{"mcpservers/dir.yaml"}, e.Files)
		assert.Equal(t, []string{"create MCPServer/default/dir"}, summary(h.quiet(m)))
	}

	{ // a named pipe, whose read would block until someone writes to it
		m := h.mark()
		require.NoError(t, mkfifo(t, filepath.Join(mcps, "pipe.yaml")))
		e := h.waitEntry(mcpKey("pipe"), "shows the error", func(_ resources.Entry, ok bool) bool { return ok })
		assert.EqualError(t, e.Err, "mcpservers/pipe.yaml: cannot read: not a regular file (mode p---------)")
		assert.Equal(t, []string{"create MCPServer/default/pipe"}, summary(h.quiet(m)), "the watcher goes on")
	}
	{ // a file too big to be a definition
		m := h.mark()
		h.write(filepath.Join(mcps, "huge.yaml"), mcp("huge", strings.Repeat("x", maxFileSize)))
		e := h.waitEntry(mcpKey("huge"), "shows the error", func(_ resources.Entry, ok bool) bool { return ok })
		assert.EqualError(t, e.Err, "mcpservers/huge.yaml: cannot read: larger than 4 MiB; definition files are small")
		assert.Equal(t, []string{"create MCPServer/default/huge"}, summary(h.quiet(m)))
	}

	_, ok := h.index.Get(mcpKey("git"))
	assert.True(t, ok, "nothing was deleted")
}

func TestUnparsableAndEmptyFilesKeepTheLastGoodDefinition(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "mcpservers", "git.yaml")
	write(t, path, mcp("git", "v1"))
	write(t, filepath.Join(dir, "mcpservers", "broken.yaml"), "not yaml at all")
	h := newHarness(t, dir, Options{}).start()

	e, ok := h.index.Get(mcpKey("broken"))
	require.True(t, ok, "a file that never parsed shows its error under the key its name implies")
	assert.EqualError(t, e.Err, `mcpservers/broken.yaml: document 1: "not yaml at all" is not "key: value"`)

	m := h.mark()
	h.write(path, "kind: MCPServer\nname git\n")
	e = h.waitEntry(mcpKey("git"), "shows the parse error", func(e resources.Entry, _ bool) bool { return e.Err != nil })
	assert.ErrorContains(t, e.Err, "mcpservers/git.yaml: document 1")
	assert.Equal(t, "v1", e.Object)

	h.write(path, mcp("git", "v2"))
	h.waitChange(m, events.OperationUpdate, mcpKey("git"), hashOf(mcp("git", "v2")))

	h.write(path, "")
	e = h.waitEntry(mcpKey("git"), "shows that it is empty", func(e resources.Entry, _ bool) bool { return e.Err != nil })
	assert.EqualError(t, e.Err, "mcpservers/git.yaml is empty; a definition file declares at least one document (delete the file to delete its resources)")
	assert.Equal(t, "v2", e.Object)

	h.write(path, mcp("git", "v2"))
	h.waitEntry(mcpKey("git"), "is good again", func(e resources.Entry, _ bool) bool { return e.Err == nil })
	assert.Equal(t, []string{
		"update MCPServer/default/git", // parse error
		"update MCPServer/default/git", // v2
		"update MCPServer/default/git", // empty
		"update MCPServer/default/git", // v2 again, error cleared
	}, summary(h.quiet(m)), "errors show as updates, never as deletes")
}

func TestADocumentOfTheWrongKindIsAnErrorNamingItsFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write(t, filepath.Join(dir, "mcpservers", "x.yaml"), wf("x", "v1")+"---\n"+mcp("y", "v1"))
	h := newHarness(t, dir, Options{}).start()

	// The error goes on the key the directory implies.
	e, ok := h.index.Get(mcpKey("x"))
	require.True(t, ok)
	assert.EqualError(t, e.Err, "mcpservers/x.yaml: kind Workflow does not belong in mcpservers/; move it to workflows/")
	assert.Nil(t, e.Object)
	_, ok = h.index.Get(wfKey("x"))
	assert.False(t, ok, "nothing is declared under a kind that does not belong here")
	e, ok = h.index.Get(mcpKey("y"))
	require.True(t, ok)
	assert.NoError(t, e.Err, "the file's other documents are fine")
	assert.Equal(t, "v1", e.Object)
}

func TestADefinitionEditedToAnotherKindKeepsItsLastGoodVersion(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "mcpservers", "git.yaml")
	write(t, path, mcp("git", "v1"))
	h := newHarness(t, dir, Options{}).start()
	m := h.mark()

	h.write(path, wf("git", "v2")) // a slip of the kind: not a delete
	h.waitEntry(mcpKey("git"), "shows the error", func(e resources.Entry, _ bool) bool { return e.Err != nil })
	e, ok := h.index.Get(mcpKey("git"))
	require.True(t, ok)
	assert.Equal(t, "v1", e.Object, "the last good definition stays in force")
	assert.Equal(t, []string{"update MCPServer/default/git"}, summary(h.quiet(m)), "an update, never a delete")
}

func TestAPanickingDecoderFailsTheFileNotTheWatcher(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write(t, filepath.Join(dir, "mcpservers", "boom.yaml"), "boom")
	h := newHarness(t, dir, Options{})
	h.w.decode = func(path string, data []byte) ([]resources.Doc, error) {
		if string(data) == "boom" {
			panic("decoder bug")
		}
		return decode(path, data)
	}
	h.start()
	e, ok := h.index.Get(mcpKey("boom"))
	require.True(t, ok)
	assert.EqualError(t, e.Err, "mcpservers/boom.yaml: the decoder panicked: decoder bug")
	h.quiet(0)
}

func TestErrorsOtherThanOverflowAreLoggedAndIgnored(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write(t, filepath.Join(dir, "mcpservers", "git.yaml"), mcp("git", "v1"))
	h := newHarness(t, dir, Options{})
	listings := h.countListings("")
	h.start()
	h.quiet(0)
	before := listings.Load()

	m := h.mark()
	h.fsnotify().Errors <- errors.New("something odd")
	assert.Empty(t, h.quiet(m), "the watcher goes on")
	assert.Equal(t, before, listings.Load(), "no rescan: nothing was lost")
}
