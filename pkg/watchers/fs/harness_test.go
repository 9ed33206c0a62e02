package fs

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fsnotify/fsnotify"
	"github.com/stretchr/testify/require"

	"github.com/musterd/musterd/pkg/bus"
	"github.com/musterd/musterd/pkg/events"
	"github.com/musterd/musterd/pkg/resources"
)

// deadline bounds every wait for the watcher: generous, because the machine
// is shared; a passing test takes a fraction of it.
const deadline = 10 * time.Second

// decode is the tests' decoder: documents separated by "---\n", each made of
// "key: value" lines with kind, name, optional namespace and spec. The
// definition is the spec; the hash is that of the document's text.
func decode(path string, data []byte) ([]resources.Doc, error) {
	var docs []resources.Doc
	for i, part := range strings.Split(string(data), "---\n") {
		fields := map[string]string{}
		for line := range strings.SplitSeq(strings.TrimSpace(part), "\n") {
			k, v, ok := strings.Cut(line, ": ")
			if !ok {
				return nil, fmt.Errorf("%s: document %d: %q is not \"key: value\"", path, i+1, line)
			}
			fields[k] = v
		}
		docs = append(docs, resources.Doc{
			Key:    events.NewKey(fields["kind"], fields["namespace"], fields["name"]),
			Object: fields["spec"],
			Hash:   hashOf(part),
		})
	}
	return docs, nil
}

func hashOf(doc string) string {
	sum := sha256.Sum256([]byte(doc))
	return hex.EncodeToString(sum[:8])
}

func doc(kind, name, spec string) string {
	return "kind: " + kind + "\nname: " + name + "\nspec: " + spec + "\n"
}

func mcp(name, spec string) string { return doc("MCPServer", name, spec) }
func wf(name, spec string) string  { return doc("Workflow", name, spec) }

func mcpKey(name string) events.Key { return events.NewKey("MCPServer", "", name) }
func wfKey(name string) events.Key  { return events.NewKey("Workflow", "", name) }

// marker is the file the harness changes to know the watcher is quiet.
var marker = wfKey("zz-marker")

// harness runs a Watcher on a real directory with real fsnotify and records
// what it publishes.
type harness struct {
	t     *testing.T
	dir   string
	bus   *bus.Bus
	index *resources.Index
	w     *Watcher

	// writing is held by h.edit while the test changes files, and by the
	// watcher's reads: a read never sees a change half made, however the
	// machine schedules the two, while fsnotify still reports every step.
	// Production has no such lock; settleDelay covers it there, and the
	// synctest tests pin that.
	writing sync.RWMutex

	mu      sync.Mutex
	changes []events.ResourceChanged
	log     []string // event types in the order received
	markers int
}

// newHarness makes a watcher of dir; opts.ConfigDir, Index and Decode are
// filled in. Set white-box hooks on h.w, then call start.
func newHarness(t *testing.T, dir string, opts Options) *harness {
	t.Helper()
	h := &harness{t: t, dir: dir, bus: bus.New(bus.Options{}), index: resources.New()}
	opts.ConfigDir, opts.Index, opts.Decode = dir, h.index, decode
	if opts.RescanInterval == 0 {
		opts.RescanInterval = -1 // a test that wants rescans asks for them
	}
	opts.Logger = slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelDebug}))
	w, err := New(h.bus, opts)
	require.NoError(t, err)
	h.w = w
	return h
}

// record subscribes the recorder and releases the bus.
func (h *harness) record() {
	_, err := h.bus.Subscribe(bus.SubscriberOptions{
		Name:     "recorder",
		Delivery: bus.Lossy(1 << 20),
		Handlers: []bus.Handler{
			bus.On(func(e events.ResourceChanged) {
				h.mu.Lock()
				defer h.mu.Unlock()
				h.changes = append(h.changes, e)
				h.log = append(h.log, e.EventType())
			}),
			bus.On(func(e events.IndexSynchronized) {
				h.mu.Lock()
				defer h.mu.Unlock()
				h.log = append(h.log, e.EventType()+":"+string(e.Source))
			}),
		},
	})
	require.NoError(h.t, err)
	h.bus.Start()
}

// start runs the watcher with fsnotify until the test ends and waits for
// its initial listing.
func (h *harness) start() *harness {
	h.t.Helper()
	return h.startWith(h.w.Start)
}

// startRescansOnly is start with no watches: only the rescans see
// changes, never an event that fsnotify delivers late.
func (h *harness) startRescansOnly() *harness {
	h.t.Helper()
	return h.startWith(func(ctx context.Context) error {
		return h.w.run(ctx, noWatches{}, make(chan fsnotify.Event), make(chan error))
	})
}

func (h *harness) startWith(run func(context.Context) error) *harness {
	t := h.t
	t.Helper()
	h.record()
	readFile, openDir := h.w.readFile, h.w.openDir
	h.w.readFile = func(rel string) ([]byte, fileStamp, error) {
		h.writing.RLock()
		defer h.writing.RUnlock()
		return readFile(rel)
	}
	h.w.openDir = func(rel string) (dirListing, error) {
		h.writing.RLock()
		l, err := openDir(rel)
		if err != nil {
			h.writing.RUnlock()
			return nil, err
		}
		return lockedListing{l, h.writing.RUnlock}, nil
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- run(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			require.NoError(t, err)
		case <-time.After(deadline):
			t.Error("the watcher did not stop")
		}
		for _, hs := range h.bus.Stats().Handlers {
			require.Zero(t, hs.Dropped, "the recorder must see every event")
		}
		h.bus.Close()
	})
	h.eventually("the initial listing", func() bool { return len(h.synced()) == 1 })
	return h
}

// fsnotify returns the watcher's fsnotify watcher, to remove its watches
// or inject errors.
func (h *harness) fsnotify() *fsnotify.Watcher { return h.w.watches.(*fsnotify.Watcher) }

// edit makes the changes of fn as one step, as far as the watcher's reads
// are concerned.
func (h *harness) edit(fn func()) {
	h.t.Helper()
	h.writing.Lock()
	defer h.writing.Unlock()
	fn()
}

// write writes path in place, as os.WriteFile does: truncate, then write.
func (h *harness) write(path, content string) {
	h.t.Helper()
	h.edit(func() { write(h.t, path, content) })
}

func (h *harness) eventually(what string, cond func() bool) {
	h.t.Helper()
	require.Eventually(h.t, cond, deadline, 2*time.Millisecond, "waiting for %s", what)
}

// synced returns the positions of IndexSynchronized in the event log.
func (h *harness) synced() []int {
	h.mu.Lock()
	defer h.mu.Unlock()
	var at []int
	for i, typ := range h.log {
		if strings.HasPrefix(typ, events.TypeIndexSynchronized) {
			at = append(at, i)
		}
	}
	return at
}

// mark returns a cursor into the recorded changes.
func (h *harness) mark() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.changes)
}

// since returns the changes recorded after mark, without the marker's.
func (h *harness) since(mark int) []events.ResourceChanged {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []events.ResourceChanged
	for _, e := range h.changes[mark:] {
		if e.Key != marker {
			out = append(out, e)
		}
	}
	return out
}

// waitChange waits for a change of key with op and hash after mark.
func (h *harness) waitChange(mark int, op events.Operation, key events.Key, hash string) {
	h.t.Helper()
	h.eventually(fmt.Sprintf("%s %s (hash %q)", op, key, hash), func() bool {
		h.mu.Lock()
		defer h.mu.Unlock()
		for _, e := range h.changes[mark:] {
			if e.Key == key && e.Operation == op && e.ContentHash == hash {
				return true
			}
		}
		return false
	})
}

// quiet makes a later change to the marker file and waits for its event.
// The watcher publishes in order and reads a burst once it has gone quiet,
// so every change made before quiet was called has been published by then.
// It returns the changes since mark, without the marker's.
func (h *harness) quiet(mark int) []events.ResourceChanged {
	h.t.Helper()
	h.markers++
	content := wf(marker.Name, fmt.Sprint("m", h.markers))
	path := filepath.Join(h.dir, "workflows", marker.Name+".yaml")
	require.NoError(h.t, os.MkdirAll(filepath.Dir(path), 0o755))
	before := h.mark()
	writeByRename(h.t, path, content)
	op := events.OperationUpdate
	if h.markers == 1 {
		op = events.OperationCreate
	}
	h.waitChange(before, op, marker, hashOf(content))
	return h.since(mark)
}

// waitEntry waits until the index's entry of key satisfies cond.
func (h *harness) waitEntry(key events.Key, what string, cond func(e resources.Entry, ok bool) bool) resources.Entry {
	h.t.Helper()
	var e resources.Entry
	h.eventually(key.String()+" "+what, func() bool {
		var ok bool
		e, ok = h.index.Get(key)
		return cond(e, ok)
	})
	return e
}

// summary spells changes as "op key", for exact comparisons.
func summary(changes []events.ResourceChanged) []string {
	out := make([]string, len(changes))
	for i, c := range changes {
		out[i] = string(c.Operation) + " " + c.Key.String()
	}
	return out
}

func write(t *testing.T, path, content string) {
	t.Helper()
	require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
	require.NoError(t, os.WriteFile(path, []byte(content), 0o644))
}

// writeByRename saves like most editors and tools: a temporary file in the
// same directory, renamed over the original.
func writeByRename(t *testing.T, path, content string) {
	t.Helper()
	tmp := filepath.Join(filepath.Dir(path), "."+filepath.Base(path)+".tmp-4711")
	require.NoError(t, os.WriteFile(tmp, []byte(content), 0o644))
	require.NoError(t, os.Rename(tmp, path))
}

// configMapVolume lays files out as the kubelet's atomic writer does in a
// ConfigMap volume: the data in a timestamped directory, ..data linking to
// it, and a link per top-level name through ..data. An update writes a new
// timestamped directory, swaps ..data by renaming ..data_tmp over it, fixes
// the top-level links and removes the old directory. The files the user
// sees get no event of their own.
type configMapVolume struct {
	t   *testing.T
	dir string
	gen int
	ts  string
	top map[string]bool
}

func newConfigMapVolume(t *testing.T, dir string) *configMapVolume {
	require.NoError(t, os.MkdirAll(dir, 0o755))
	return &configMapVolume{t: t, dir: dir}
}

func (v *configMapVolume) update(files map[string]string) {
	t := v.t
	t.Helper()
	v.gen++
	ts := fmt.Sprintf("..2026_11_21_10_00_00.%09d", v.gen)
	top := map[string]bool{}
	for name, content := range files {
		write(t, filepath.Join(v.dir, ts, name), content)
		first, _, _ := strings.Cut(name, "/")
		top[first] = true
	}
	tmp := filepath.Join(v.dir, "..data_tmp")
	require.NoError(t, os.Symlink(ts, tmp))
	require.NoError(t, os.Rename(tmp, filepath.Join(v.dir, "..data")))
	for name := range top {
		if !v.top[name] {
			require.NoError(t, os.Symlink(filepath.Join("..data", name), filepath.Join(v.dir, name)))
		}
	}
	for name := range v.top {
		if !top[name] {
			require.NoError(t, os.Remove(filepath.Join(v.dir, name)))
		}
	}
	if v.ts != "" {
		require.NoError(t, os.RemoveAll(filepath.Join(v.dir, v.ts)))
	}
	v.ts, v.top = ts, top
}

// rescans waits until the watcher has made n more whole scans of what
// listings counts: n+1 more listings, since a scan reads its files after
// its listing, and the watcher makes one scan at a time.
func (h *harness) rescans(listings *atomic.Int64, n int64) {
	h.t.Helper()
	from := listings.Load()
	h.eventually(fmt.Sprint(n, " more rescans"), func() bool { return listings.Load() >= from+n+1 })
}

// countListings counts the watcher's directory listings of rel from now on,
// or of every directory if rel is empty. Call it before start. A scan that
// finds a file gone lists its directory twice (listing.go), so a test that
// counts rescans deletes no file while it counts.
func (h *harness) countListings(rel string) *atomic.Int64 {
	var n atomic.Int64
	openDir := h.w.openDir
	h.w.openDir = func(r string) (dirListing, error) {
		if rel == "" || r == rel {
			n.Add(1)
		}
		return openDir(r)
	}
	return &n
}

// lockedListing is a listing that holds a lock until it is closed.
type lockedListing struct {
	dirListing
	unlock func()
}

func (l lockedListing) close() error {
	defer l.unlock()
	return l.dirListing.close()
}

// failingListing is a listing whose entries fail after the first few.
type failingListing struct {
	dirListing
	entries int
	failure error
}

func (l *failingListing) next() ([]byte, bool) {
	if l.entries == 0 {
		return nil, false
	}
	l.entries--
	return l.dirListing.next()
}

func (l *failingListing) err() error {
	if l.entries == 0 {
		return l.failure
	}
	return l.dirListing.err()
}
