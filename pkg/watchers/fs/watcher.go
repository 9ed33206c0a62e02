package fs

import (
	"context"
	"errors"
	"fmt"
	"hash/maphash"
	iofs "io/fs"
	"log/slog"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/musterd/musterd/pkg/apis/muster/v1alpha1"
	"github.com/musterd/musterd/pkg/bus"
	"github.com/musterd/musterd/pkg/events"
	"github.com/musterd/musterd/pkg/redact"
	"github.com/musterd/musterd/pkg/resources"
)

// DefaultRescanInterval is the periodic rescan's interval when
// Options.RescanInterval is zero.
const DefaultRescanInterval = time.Minute

// settleDelay is how long a burst of events must be quiet before the
// watcher reads what it names. Writers truncate and then write, editors
// rename and recreate, the kubelet swaps links in several steps: reading in
// the middle of that sees a state nobody meant.
const settleDelay = 50 * time.Millisecond

// maxSettle bounds the wait for quiet, so that a file rewritten without
// pause is still read.
const maxSettle = time.Second

// periodicRescan is the reason of the periodic rescan, which is routine and
// logged at debug level unless it finds something.
const periodicRescan = "periodic rescan"

// Options configures a Watcher.
type Options struct {
	// ConfigDir holds the kind directories. Required; it need not exist yet.
	ConfigDir string
	// Index receives what the files declare. Required.
	Index *resources.Index
	// Decode turns one file's bytes into its documents. path is relative
	// to ConfigDir ("mcpservers/git.yaml") so errors name it that way. A
	// returned error means the file as a whole could not be parsed. It is
	// called for several files at once when a directory is listed, so it
	// must be safe for concurrent use. Default DecodeV1alpha1.
	Decode func(path string, data []byte) ([]resources.Doc, error)
	// Kinds maps a subdirectory of ConfigDir to the kind of the documents it
	// holds. Default {"mcpservers": "MCPServer", "workflows": "Workflow"}.
	Kinds map[string]string
	// RescanInterval is the period of the safety-net rescan that catches
	// changes fsnotify missed. Default DefaultRescanInterval; negative
	// disables it.
	RescanInterval time.Duration
	// Logger receives debug lines per event, info lines for rescans and
	// directories that appear or disappear, and warnings for errors. Default
	// slog.Default().
	Logger *slog.Logger
}

// Watcher keeps a resources.Index true to the definition files under a
// config directory. See the package documentation for its guarantees. Make
// one with New and run it with Start.
type Watcher struct {
	bus      *bus.Bus
	index    *resources.Index
	decode   func(string, []byte) ([]resources.Doc, error)
	root     string            // ConfigDir, absolute and clean
	kinds    map[string]string // subdirectory → kind
	subdirs  []string          // the keys of kinds, sorted
	interval time.Duration
	racy     time.Duration // racyMargin; tests set less
	log      *slog.Logger

	// readFile, statFile and openDir read a path relative to root.
	// Tests replace them to inject errors that a filesystem will not
	// produce on demand. readFile gives the file's stamp as it was before
	// the read (zero if the system gives none); openDir starts a listing
	// of a directory (listing.go).
	readFile  func(rel string) ([]byte, fileStamp, error)
	statFile  func(rel string) (fileStamp, error)
	openDir   func(rel string) (dirListing, error)
	relBuf    []byte // listChanged's relative path, reused
	direntBuf []byte // the listings' buffer, reused

	started atomic.Bool

	// Owned by the Start goroutine.
	watches   watchList
	watched   map[string]bool       // paths given to watches.Add
	published int                   // ResourceChanged events published
	stamps    map[string]stampPrint // definition file → its stamp's print when last read, if keepable (stamps.go)
	stampSeed maphash.Seed          // seeds printOf
	present   map[string]bool       // "." and subdirs → whether last seen; absent when never looked
	work      pending
}

// pending is the work that events asked for and that waits for quiet.
type pending struct {
	all    bool            // rescan everything and re-establish the watches
	reason string          // why all is set, for the log
	dirs   map[string]bool // kind subdirectories to rescan
	files  []string        // definition files to read again, in the order first seen
	seen   map[string]bool // files, as a set
	since  time.Time       // when the first of this work arrived
	// readEarly holds the files read at once on their first event; their
	// later events wait for quiet. It empties at the flush, so the first
	// event after a quiet is read at once again.
	readEarly map[string]bool
}

func (p *pending) empty() bool {
	return !p.all && len(p.dirs) == 0 && len(p.files) == 0 && len(p.readEarly) == 0
}

// New returns a watcher of opts.ConfigDir publishing on b. It touches the
// filesystem only in Start.
func New(b *bus.Bus, opts Options) (*Watcher, error) {
	switch {
	case b == nil:
		return nil, errors.New("fs-watcher: nil bus")
	case opts.ConfigDir == "":
		return nil, errors.New("fs-watcher: Options.ConfigDir is required")
	case opts.Index == nil:
		return nil, errors.New("fs-watcher: Options.Index is required")
	}
	if opts.Decode == nil {
		opts.Decode = DecodeV1alpha1
	}
	root, err := filepath.Abs(opts.ConfigDir)
	if err != nil {
		return nil, fmt.Errorf("fs-watcher: config dir %q: %w", opts.ConfigDir, err)
	}
	kinds := opts.Kinds
	if kinds == nil {
		kinds = map[string]string{"mcpservers": "MCPServer", "workflows": "Workflow"}
	}
	if len(kinds) == 0 {
		return nil, errors.New("fs-watcher: Options.Kinds is empty: nothing to watch")
	}
	for sub, kind := range kinds {
		if sub == "" || strings.ContainsAny(sub, `/\`) || strings.HasPrefix(sub, ".") || kind == "" {
			return nil, fmt.Errorf("fs-watcher: Options.Kinds[%q] = %q: want a plain, visible subdirectory name and a kind", sub, kind)
		}
	}
	switch {
	case opts.RescanInterval == 0:
		opts.RescanInterval = DefaultRescanInterval
	case opts.RescanInterval < 0:
		opts.RescanInterval = 0
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	w := &Watcher{
		bus:       b,
		index:     opts.Index,
		decode:    opts.Decode,
		root:      root,
		kinds:     maps.Clone(kinds),
		subdirs:   slices.Sorted(maps.Keys(kinds)),
		interval:  opts.RescanInterval,
		racy:      racyMargin,
		log:       opts.Logger.With("component", "fs-watcher", "configDir", root),
		watched:   map[string]bool{},
		present:   map[string]bool{},
		stamps:    map[string]stampPrint{},
		stampSeed: maphash.MakeSeed(),
	}
	w.readFile = func(rel string) ([]byte, fileStamp, error) { return readDefinition(w.abs(rel)) }
	w.statFile = func(rel string) (fileStamp, error) { return statStamp(w.abs(rel)) }
	w.openDir = func(rel string) (dirListing, error) { return w.openListing(w.abs(rel)) }
	return w, nil
}

// Name identifies the component.
func (w *Watcher) Name() string { return "fs-watcher" }

// Start lists the kind directories into the index, publishes
// IndexSynchronized, and then follows changes until ctx is done, when it
// returns nil. It fails only when fsnotify cannot start (or stops). A
// Watcher starts once.
func (w *Watcher) Start(ctx context.Context) error {
	if !w.started.CompareAndSwap(false, true) {
		return errors.New("fs-watcher: already started")
	}
	fsw, err := fsnotify.NewWatcher()
	if err != nil {
		return fmt.Errorf("fs-watcher: start fsnotify: %w", err)
	}
	defer fsw.Close()
	return w.run(ctx, fsw, fsw.Events, fsw.Errors)
}

// watchList is the part of *fsnotify.Watcher that sets up watches. Tests of
// the timing run the loop in a synctest bubble with a stand-in, because
// fsnotify's reader goroutine blocks in a system call, which a bubble does
// not count as idle.
type watchList interface {
	Add(path string) error
	Remove(path string) error
}

// run is Start's loop on the goroutine that owns the watcher's state.
func (w *Watcher) run(ctx context.Context, watches watchList, fsEvents <-chan fsnotify.Event, fsErrors <-chan error) error {
	w.watches = watches
	w.work = pending{all: true, reason: "initial listing"}
	w.flush()
	bus.Publish(w.bus, events.IndexSynchronized{Meta: events.NewMeta(""), Source: events.SourceFilesystem})

	var rescan <-chan time.Time
	if w.interval > 0 {
		t := time.NewTicker(w.interval)
		defer t.Stop()
		rescan = t.C
	}
	settle := time.NewTimer(settleDelay)
	settle.Stop()
	defer settle.Stop()
	w.settleLeftover(settle)
	for {
		before := w.work.empty()
		select {
		case <-ctx.Done():
			w.log.Debug("fs-watcher stopped")
			return nil
		case ev, ok := <-fsEvents:
			if !ok {
				return errors.New("fs-watcher: fsnotify closed its event channel")
			}
			w.note(ev)
		case err, ok := <-fsErrors:
			if !ok {
				return errors.New("fs-watcher: fsnotify closed its error channel")
			}
			w.noteError(err)
		case <-settle.C:
			w.flush()
			w.settleLeftover(settle)
			continue
		case <-rescan:
			w.requestAll(periodicRescan)
			published := w.published
			w.flush()
			if n := w.published - published; n > 0 {
				w.log.Info("the periodic rescan found changes that no event reported", "changes", n)
			}
			settle.Stop()
			w.settleLeftover(settle)
			continue
		}
		if w.work.empty() {
			continue // the event named nothing that matters
		}
		// Wait for quiet: settleDelay after this event, but no later than
		// maxSettle after the first event of the burst.
		now := time.Now()
		if before {
			w.work.since = now
		}
		settle.Reset(min(settleDelay, w.work.since.Add(maxSettle).Sub(now)))
	}
}

// settleLeftover arms settle for the work that a flush asked for itself
// (a directory replaced at each of its listings), which no event may
// follow.
func (w *Watcher) settleLeftover(settle *time.Timer) {
	if !w.work.empty() {
		w.work.since = time.Now()
		settle.Reset(settleDelay)
	}
}

// note records what ev asks to look at again.
func (w *Watcher) note(ev fsnotify.Event) {
	rel, inside := w.rel(ev.Name)
	if !inside {
		// An event in a parent watched while the config directory is
		// missing matters only if it is on the way to the config directory.
		if ev.Name == w.root || strings.HasPrefix(w.root, ev.Name+string(filepath.Separator)) {
			w.log.Debug("event", "op", ev.Op.String(), "path", rel, "action", "rescan all")
			w.requestAll("a parent of the config directory changed")
		}
		return
	}
	if rel == "." {
		w.log.Debug("event", "op", ev.Op.String(), "path", rel, "action", "rescan all")
		w.requestAll("the config directory changed")
		return
	}
	sub, name, nested := strings.Cut(rel, "/")
	_, isKindDir := w.kinds[sub]
	switch {
	case !nested && isKindDir:
		w.log.Debug("event", "op", ev.Op.String(), "path", rel, "action", "rescan directory")
		w.requestDir(sub)
	case !nested && strings.HasPrefix(sub, ".."):
		// A ConfigMap mounted at the config directory swapped its ..data:
		// every kind directory may now resolve to another directory.
		w.log.Debug("event", "op", ev.Op.String(), "path", rel, "action", "rescan all")
		w.requestAll("ConfigMap update at the config directory")
	case !isKindDir || strings.Contains(name, "/"):
		// config.yaml, status/…: not a definition.
	case strings.HasPrefix(name, ".."):
		// A ConfigMap mounted at the kind directory swapped its ..data: the
		// definition files are links through it and see no event.
		w.log.Debug("event", "op", ev.Op.String(), "path", rel, "action", "rescan directory")
		w.requestDir(sub)
	case isDefinitionFile(name):
		w.noteFile(ev, rel)
	}
}

// noteFile reads rel at once when this is its first event since the last
// quiet (the leading edge: the debouncer downstream coalesces what
// follows), and publishes what it holds if that is a complete, valid
// definition. Anything else (the file is gone, empty, unreadable or does not
// decode) is what a writer or an editor leaves for an instant, so it waits
// for quiet like every later event of the burst: a delete followed by a
// create, or a truncate followed by a write, is never published half done,
// and a half-written file never turns its resource to Error. An event
// after a failed read tries again at once, so a truncate's event does not
// hold up the write that follows it.
func (w *Watcher) noteFile(ev fsnotify.Event, rel string) {
	if !w.work.readEarly[rel] && w.readIfValid(rel) {
		w.log.Debug("event", "op", ev.Op.String(), "path", rel, "action", "read at once")
		if w.work.readEarly == nil {
			w.work.readEarly = map[string]bool{}
		}
		w.work.readEarly[rel] = true
		if w.work.seen[rel] {
			delete(w.work.seen, rel)
			w.work.files = slices.DeleteFunc(w.work.files, func(f string) bool { return f == rel })
		}
		return
	}
	w.log.Debug("event", "op", ev.Op.String(), "path", rel, "action", "read file once quiet")
	if w.work.seen == nil {
		w.work.seen = map[string]bool{}
	}
	if !w.work.seen[rel] {
		w.work.seen[rel] = true
		w.work.files = append(w.work.files, rel)
	}
}

// writeChunk is the write size of buffered writers (Go's bufio, C stdio on
// ext4 and most filesystems, Python's 8 KiB is a multiple): every write but
// a buffered writer's last is a multiple of it. A file whose size is one
// may be a writer's first chunks with more to come, so it is read only once
// quiet; any other size is what a writer's final write left.
const writeChunk = 4096

// readIfValid reads rel and, if it holds one or more documents that all
// decode and still declares every resource it declared before, puts them
// in the index and publishes the changes. It reports whether it did;
// otherwise it changed nothing. A file that stopped declaring a resource
// may be a multi-document file caught half written, so what would be a
// delete waits for quiet; so does a file of a size a buffered writer's
// unfinished write leaves (writeChunk).
func (w *Watcher) readIfValid(rel string) bool {
	sub := path.Dir(rel)
	data, _, err := w.readFile(rel)
	if err != nil || len(data)%writeChunk == 0 { // empty, too
		return false
	}
	docs, err := w.decodeFile(rel, sub, data)
	if err != nil || len(docs) == 0 {
		return false
	}
	declared := map[events.Key]bool{}
	for _, d := range docs {
		if d.Err != nil {
			return false
		}
		declared[d.Key.Canonical()] = true
	}
	for _, k := range w.index.FileKeys(rel) {
		if !declared[k] {
			return false
		}
	}
	_, name := path.Split(rel)
	fallback := events.NewKey(w.kinds[sub], "", strings.TrimSuffix(name, path.Ext(name)))
	changes := w.index.SetFile(rel, docs, nil, fallback)
	w.warnIgnored(rel, docs, changes)
	w.publish(changes)
	delete(w.stamps, rel) // just written: read it again at the next scan
	return true
}

func (w *Watcher) noteError(err error) {
	if errors.Is(err, fsnotify.ErrEventOverflow) {
		w.log.Warn("fsnotify lost events (queue overflow); rescanning everything")
		w.requestAll("fsnotify queue overflow")
		return
	}
	w.log.Warn("fsnotify error", "error", err)
}

func (w *Watcher) requestAll(reason string) {
	if !w.work.all {
		w.work.all, w.work.reason = true, reason
	}
}

func (w *Watcher) requestDir(sub string) {
	if w.work.dirs == nil {
		w.work.dirs = map[string]bool{}
	}
	w.work.dirs[sub] = true
}

// flush does the pending work: the watches first, so that nothing created
// while the directories are read goes unseen, then the directory rescans,
// then the single files those did not cover.
func (w *Watcher) flush() {
	work := w.work
	w.work = pending{}
	if work.all || len(work.dirs) > 0 {
		w.ensureWatches()
	}
	switch {
	case work.all && work.reason == periodicRescan:
		w.log.Debug("rescanning every kind directory", "reason", work.reason)
	case work.all:
		w.log.Info("rescanning every kind directory", "reason", work.reason)
	}
	scanned := map[string]bool{}
	for _, sub := range w.subdirs {
		if work.all || work.dirs[sub] {
			scanned[sub] = w.scanDir(sub, !work.all)
		}
	}
	for _, rel := range work.files {
		if !scanned[path.Dir(rel)] {
			w.recheckFile(rel)
		}
	}
}

// ensureWatches watches the config directory and its kind directories, or,
// while the config directory is missing, its nearest existing parent. Every
// path is added again each time: a path may now resolve to another
// directory (a ConfigMap's link swapped), or fsnotify may have dropped its
// watch when the directory went away.
func (w *Watcher) ensureWatches() {
	var want map[string]bool
	for {
		dir := nearestExistingDir(w.root)
		w.addWatch(dir)
		want = map[string]bool{dir: true}
		// Something on the way may have appeared before the watch was
		// there to see it.
		if dir == w.root || nearestExistingDir(w.root) == dir {
			break
		}
	}
	w.notePresence(".", want[w.root], "config directory")
	for _, sub := range w.subdirs {
		abs := w.abs(sub)
		ok := want[w.root] && isDir(abs)
		if ok {
			w.addWatch(abs)
			want[abs] = true
		}
		w.notePresence(sub, ok, "kind directory")
	}
	for p := range w.watched {
		if !want[p] {
			_ = w.watches.Remove(p) // fails when the directory, and so the watch, is gone already
		}
	}
	w.watched = want
}

func (w *Watcher) addWatch(abs string) {
	if err := w.watches.Add(abs); err != nil {
		rel, _ := w.rel(abs)
		w.log.Warn("cannot watch directory; its changes are seen only by rescans", "path", rel, "error", err)
	}
	w.watched[abs] = true // so that a watch added here is removed when no longer wanted
}

func (w *Watcher) notePresence(key string, now bool, what string) {
	was, known := w.present[key]
	w.present[key] = now
	switch {
	case !known && !now && key == ".":
		w.log.Info("config directory does not exist yet; watching for it")
	case known && was != now && now:
		w.log.Info(what+" appeared", "path", key)
	case known && was != now:
		w.log.Info(what+" disappeared", "path", key)
	}
}

// scanDir reads the kind directory sub and every definition file in it into
// the index, and forgets the files it no longer holds. It reports whether it
// could tell what the directory holds: false leaves the index alone.
func (w *Watcher) scanDir(sub string, logIt bool) bool {
	if logIt {
		w.log.Info("rescanning kind directory", "path", sub)
	}
	changed, unchanged, err := w.listChanged(sub)
	if !w.listingTells(sub, err) {
		return false
	}
	w.recheckFiles(changed)
	// What the index holds of sub beyond the files listed is gone. It
	// holds every unchanged one (listing.go), so unless it holds more
	// files of sub than those and the changed ones still there, nothing is.
	present := unchanged
	for _, rel := range changed {
		if w.index.HasFile(rel) {
			present++
		}
	}
	if w.index.CountFilesIn(sub) == present {
		return true
	}
	listed, err := w.listFiles(sub)
	if !w.listingTells(sub, err) {
		return false
	}
	w.forgetUnlisted(sub, listed)
	return true
}

// listingTells reports whether a listing of the kind directory sub that
// failed with err (nil for none) tells what sub holds: it does unless it
// failed while sub is there, which it logs.
func (w *Watcher) listingTells(sub string, err error) bool {
	if err == nil || w.dirGone(sub) { // gone: it declares nothing
		return true
	}
	if errors.Is(err, errDirMoved) {
		// Replaced at every listing: look again once it is quiet
		// (listing.go).
		w.log.Warn("kind directory replaced while listed; keeping what it declared and listing it again", "path", sub)
		w.requestDir(sub)
		return false
	}
	w.log.Warn("cannot list kind directory; keeping what it declared", "path", sub, "error", pathErrorCause(err))
	return false
}

// dirGone looks again at a directory that could not be listed: only a
// directory that is not there (or is not a directory) declares nothing.
func (w *Watcher) dirGone(sub string) bool {
	info, err := os.Stat(w.abs(sub))
	return notExist(err) || (err == nil && !info.IsDir())
}

// recheckFile brings the index up to date with what rel holds now.
func (w *Watcher) recheckFile(rel string) {
	w.apply(rel, w.read(rel, 0))
}

// readResult is what read found in a file: gone, unchanged since the read
// that left the print it was given, or its documents, or the error that
// makes it unusable as a whole; and its stamp, if it was read and the
// stamp is keepable.
type readResult struct {
	gone, unchanged bool
	docs            []resources.Doc
	err             error
	stamp           fileStamp
}

// read reads and decodes rel, unless known, the print of its last read's
// stamp, is not zero and is still its stamp's. It touches no state of the
// watcher's but its settings, so that several files can be read at once.
func (w *Watcher) read(rel string, known stampPrint) readResult {
	if known != 0 {
		if now, err := w.statFile(rel); err == nil && w.printOf(now) == known {
			return readResult{unchanged: true}
		}
	}
	data, stamp, err := w.readFile(rel)
	switch {
	case notExist(err):
		return readResult{gone: true}
	case err != nil:
		return readResult{err: fmt.Errorf("%s: cannot read: %w", rel, pathErrorCause(err))}
	case !stamp.keepable(time.Now(), w.racy):
		stamp = fileStamp{}
	}
	if len(data) == 0 {
		return readResult{err: fmt.Errorf("%s is empty; a definition file declares at least one document (delete the file to delete its resources)", rel), stamp: stamp}
	}
	docs, err := w.decodeFile(rel, path.Dir(rel), data)
	return readResult{docs: docs, err: err, stamp: stamp}
}

// apply brings the index up to date with what read found in rel.
func (w *Watcher) apply(rel string, r readResult) {
	if r.unchanged {
		return
	}
	w.noteStamp(rel, r)
	if r.gone {
		w.publish(w.index.RemoveFile(rel))
		return
	}
	sub, name := path.Split(rel)
	sub = strings.TrimSuffix(sub, "/")
	fallback := events.NewKey(w.kinds[sub], "", strings.TrimSuffix(name, path.Ext(name)))
	docs, err := r.docs, r.err
	changes := w.index.SetFile(rel, docs, err, fallback)
	// Warn when an error is news, not on every rescan of a broken file.
	if len(changes) > 0 {
		if err != nil {
			w.log.Warn("definition file unusable; what it declared before stays in force", "path", rel, "error", redact.String(err.Error()))
		}
		for _, d := range docs {
			if d.Err != nil {
				w.log.Warn("definition unusable; its last good version stays in force", "path", rel, "key", d.Key.String(), "error", redact.String(d.Err.Error()))
			}
		}
	}
	w.warnIgnored(rel, docs, changes)
	w.publish(changes)
}

// warnIgnored logs the warnings of each good document of rel that
// changes hold, one line a document: when it changes, not on every rescan
// of its file, nor when another document of the file changes.
func (w *Watcher) warnIgnored(rel string, docs []resources.Doc, changes []resources.Change) {
	for _, d := range docs {
		if d.Err != nil || len(d.Warnings) == 0 {
			continue
		}
		k := d.Key.Canonical()
		if slices.ContainsFunc(changes, func(c resources.Change) bool { return c.Key == k }) {
			w.log.Warn("definition has fields musterd ignores", "path", rel, "key", k.String(), "warnings", redact.String(strings.Join(d.Warnings, "; ")))
		}
	}
}

// decodeFile decodes rel and marks the documents whose kind does not belong
// in its directory. A decoder that panics fails the file, not the watcher.
func (w *Watcher) decodeFile(rel, sub string, data []byte) (docs []resources.Doc, err error) {
	defer func() {
		if r := recover(); r != nil {
			docs, err = nil, fmt.Errorf("%s: the decoder panicked: %v", rel, r)
		}
	}()
	docs, err = w.decode(rel, data)
	if err != nil {
		return nil, err
	}
	want := w.kinds[sub]
	for i, d := range docs {
		if d.Key.Kind == want {
			continue
		}
		msg := fmt.Sprintf("%s: kind %s does not belong in %s/", rel, d.Key.Kind, sub)
		for _, other := range w.subdirs {
			if w.kinds[other] == d.Key.Kind {
				msg += fmt.Sprintf("; move it to %s/", other)
			}
		}
		// The error goes on the key the directory implies: a definition
		// edited to another kind is a broken definition of this one, whose
		// last good version stays in force, never a delete of it.
		docs[i] = resources.Doc{Key: events.NewKey(want, d.Key.Namespace, d.Key.Name), Err: errors.New(msg)}
	}
	return docs, nil
}

func (w *Watcher) publish(changes []resources.Change) {
	w.published += len(changes)
	for _, c := range changes {
		w.log.Debug("resource changed", "key", c.Key.String(), "op", string(c.Op), "path", c.File)
		bus.Publish(w.bus, events.ResourceChanged{
			Meta:        events.NewMeta(""),
			Key:         c.Key,
			Operation:   c.Op,
			Source:      events.SourceFilesystem,
			FilePath:    c.File,
			ContentHash: c.Hash,
		})
	}
}

func (w *Watcher) abs(rel string) string { return filepath.Join(w.root, filepath.FromSlash(rel)) }

// rel spells abs relative to the config directory, with forward slashes,
// and reports whether it is inside it.
func (w *Watcher) rel(abs string) (string, bool) {
	rel, err := filepath.Rel(w.root, abs)
	if err != nil {
		return abs, false
	}
	rel = filepath.ToSlash(rel)
	return rel, rel != ".." && !strings.HasPrefix(rel, "../")
}

// isDefinitionFile reports whether name, in a kind directory, is a
// definition file: *.yaml or *.yml and not hidden. Editors' swap, lock,
// backup and probe files (.x.yaml.swp, .#x.yaml, x.yaml~, #x.yaml#, 4913)
// and a ConfigMap's ..data and timestamped directories are not.
func isDefinitionFile(name string) bool {
	if strings.HasPrefix(name, ".") {
		return false
	}
	ext := path.Ext(name)
	return (ext == ".yaml" || ext == ".yml") && len(name) > len(ext)
}

// maxFileSize bounds what is read of one file: the decoder's own limit.
// Definitions are small (the
// Kubernetes API takes objects of 1.5 MiB at most); a bigger file is a
// mistake, not worth the memory.
const maxFileSize = v1alpha1.MaxFileSize

// notRegular is the error of reading abs, of file type typ, if it is not
// a regular file: a directory, or a named pipe, whose read would block the
// watcher until someone wrote to it. readDefinition opens a file without
// blocking and asks this of it before reading.
func notRegular(abs string, typ iofs.FileMode) error {
	switch {
	case typ.IsDir():
		return &iofs.PathError{Op: "read", Path: abs, Err: syscall.EISDIR}
	case !typ.IsRegular():
		return &iofs.PathError{Op: "read", Path: abs, Err: fmt.Errorf("not a regular file (mode %s)", typ.Type())}
	}
	return nil
}

// tooLarge is the error of reading abs, larger than maxFileSize.
func tooLarge(abs string) error {
	return &iofs.PathError{Op: "read", Path: abs, Err: fmt.Errorf("larger than %d MiB; definition files are small", maxFileSize>>20)}
}

func isDir(abs string) bool {
	info, err := os.Stat(abs)
	return err == nil && info.IsDir()
}

// nearestExistingDir returns dir, or its nearest parent that is a directory.
func nearestExistingDir(dir string) string {
	for !isDir(dir) {
		parent := filepath.Dir(dir)
		if parent == dir {
			return dir
		}
		dir = parent
	}
	return dir
}

// notExist reports whether err says a path is not there, which includes a
// path through something that is not a directory.
func notExist(err error) bool {
	return errors.Is(err, iofs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR)
}

// pathErrorCause strips the absolute path from an *fs.PathError, so that
// messages name files relative to the config directory.
func pathErrorCause(err error) error {
	if pe, ok := errors.AsType[*iofs.PathError](err); ok {
		return pe.Err
	}
	return err
}
