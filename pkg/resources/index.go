package resources

import (
	"fmt"
	"maps"
	"path"
	"slices"
	"strings"
	"sync"

	"github.com/musterd/musterd/pkg/events"
)

// Doc is one definition read from a file.
type Doc struct {
	Key events.Key
	// Object is the decoded, valid definition; nil when Err is set.
	Object any
	// Hash identifies Object's content, Warnings included: documents
	// whose warnings differ have different hashes.
	Hash string
	// Err says why this document is not usable (a validation error naming
	// file, line and field); the key is still known.
	Err error
	// Warnings are what the decoder ignored in the document (fields the
	// schema does not have), each naming file, line and field; nil if
	// nothing.
	Warnings []string
}

// Entry is a resource as the index holds it.
type Entry struct {
	Key events.Key
	// Object is the definition in force: the last good one. It is nil when
	// no good definition has been seen yet.
	Object any
	// Hash identifies Object; empty when Object is nil.
	Hash string
	// Files declare the resource: one, or several in a conflict.
	Files []string
	// Err says why the files do not yield a good definition now; nil when
	// Object is what the file says.
	Err error
	// Warnings are those of the document that made Object the definition
	// in force (Doc.Warnings); nil if none. They are to be read, never
	// changed.
	Warnings []string
}

// Change is a resource whose entry changed.
type Change struct {
	Key events.Key
	// Op is OperationCreate, OperationUpdate or OperationDelete.
	Op events.Operation
	// Hash is the entry's hash after the change.
	Hash string
	// File is the first file declaring the resource, or the one that last
	// did, for a delete.
	File string
}

// Index is the desired-state index. It is safe for concurrent use.
//
// It holds each key once, in its entry, which the entries (found by the
// key's hash), the files' documents and sorted point to; and a document's
// definition only while it is not the one in force. What an Entry lists
// beside (the files, the error) is derived when asked for. At 100,000 files of one
// document each, an Entry and a Doc per key, each with the key, a
// one-path Files slice and a sorted key were 465 bytes a resource; this
// is 212 (BenchmarkRetainedPerResource).
type Index struct {
	mu    sync.RWMutex
	files map[string]*fileState
	// entries holds a resource while a file declares it. An entry is
	// changed in place, never replaced, so that the documents of files
	// and sorted can point to it.
	entries entrySet
	// conflicts holds the keys that several files declare: the files,
	// sorted, and the error naming them. There is no other record of who
	// declares a key: an entry names its one file, and a map of claims
	// beside the entries would hold the lists again for every resource.
	conflicts map[events.Key]conflict
	// sorted holds the entries in events.CompareKeys order of their keys
	// while sortedOK; a delete, or a create that does not sort last,
	// clears it and the next Keys sorts again. A listing creates its keys
	// in the order of its files, which is theirs, so a cold start never
	// sorts: the workflow engine lists the keys after every burst, and
	// sorting 100,000 keys each time was a tenth of that start's CPU.
	sorted   []*entry
	sortedOK bool
	// namespaces counts the entries of each kind in each namespace, so that
	// Named finds a name without listing every key.
	namespaces map[string]map[string]int
	// warnings are the warnings of the definitions in force that have
	// some. Beside the entries, not in them: few definitions have
	// warnings, and a field in every entry would cost every resource.
	warnings map[*entry][]string
}

// entry is a resource as the index holds it; Entry is it with its files
// and error spelled out.
type entry struct {
	key events.Key
	// object and hash are the definition in force, as in Entry.
	object any
	hash   string
	// file is the one file declaring the resource; nil while several do
	// (conflicts holds them). Its document of key says what the error is,
	// if any.
	file *fileState
	// next is the next entry of the same hash in entries.
	next *entry
}

// conflict is a key that several files declare.
type conflict struct {
	files []string
	err   error
}

// New returns an empty index.
func New() *Index {
	return &Index{files: map[string]*fileState{}, entries: newEntrySet(),
		conflicts: map[events.Key]conflict{}, sortedOK: true, namespaces: map[string]map[string]int{}, warnings: map[*entry][]string{}}
}

// SetFile records what path declares now: docs when it was parsed, or err
// when it could not be read or parsed at all. An unreadable file keeps
// declaring what it last declared; if it never declared anything, its
// error is recorded on fallback (the key its name and directory imply), so
// that the error shows. It returns the resources whose entries changed,
// sorted by key.
func (ix *Index) SetFile(path string, docs []Doc, err error, fallback events.Key) []Change {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	old := ix.files[path]
	var oldKeys []events.Key
	if old != nil {
		oldKeys = old.keys()
	}
	var next *fileState
	switch {
	case err != nil && old != nil:
		next = &fileState{path: path}
		next.keepBroken(old, err)
	case err != nil:
		next = &fileState{path: path}
		next.set(slot{e: ix.entryOf(next, fallback.Canonical()), own: &said{err: err}})
	case len(docs) == 1:
		next = ix.fileOfOne(path, docs[0])
	default:
		next = &fileState{path: path}
		for _, d := range docs {
			e := ix.entryOf(next, d.Key.Canonical())
			next.set(slot{e: e, own: &said{object: d.Object, hash: d.Hash, err: d.Err, warnings: d.Warnings}})
		}
	}
	ix.files[path] = next
	newKeys := next.keys()
	claims := ix.claimsOf(len(oldKeys) + len(newKeys))
	for _, k := range oldKeys {
		if next.slotOf(k) == nil {
			claims.drop(k, path)
		}
	}
	for _, k := range newKeys {
		claims.add(k, path)
	}
	changes := ix.refresh(append(oldKeys, newKeys...), path, claims)
	old.drop()
	return changes
}

// entryOf returns the entry of k for a document of f: the index's, or
// the one an earlier document of f made, or a new one, which refresh
// enters in the index.
func (ix *Index) entryOf(f *fileState, k events.Key) *entry {
	if e := ix.entries.get(k); e != nil {
		return e
	}
	if s := f.slotOf(k); s != nil {
		return s.e
	}
	return &entry{key: k}
}

// fileWithEntry is a file of one document and the entry of its key,
// allocated together (fileOfOne).
type fileWithEntry struct {
	file  fileState
	entry entry
}

// fileOfOne returns the state of path declaring d alone. When d's key has
// no entry yet (every file of a cold start), the file and the entry that
// refresh enters are one allocation.
//
// Apart, the file (48 bytes) and the entry (96) share their size classes
// with a scan's garbage (the index's changes are 96 bytes; a one-key
// slice and a map's header 48). A class's spans are
// filled in turn by both, and once the garbage is collected they stay a
// third to a half empty in a daemon at rest. Together they are 144 bytes, a
// class a scan does not otherwise use.
func (ix *Index) fileOfOne(path string, d Doc) *fileState {
	k := d.Key.Canonical()
	var f *fileState
	e := ix.entries.get(k)
	if e == nil {
		both := &fileWithEntry{file: fileState{path: path}, entry: entry{key: k}}
		f, e = &both.file, &both.entry
	} else {
		f = &fileState{path: path}
	}
	f.set(slot{e: e, own: &said{object: d.Object, hash: d.Hash, err: d.Err, warnings: d.Warnings}})
	return f
}

// RemoveFile forgets path: what only it declared is deleted.
func (ix *Index) RemoveFile(path string) []Change {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	old := ix.files[path]
	if old == nil {
		return nil
	}
	delete(ix.files, path)
	keys := old.keys()
	claims := ix.claimsOf(len(keys))
	for _, k := range keys {
		claims.drop(k, path)
	}
	changes := ix.refresh(keys, path, claims)
	old.drop()
	return changes
}

// FileKeys returns the keys path declares now, in the order of its
// documents; none if the index does not know path.
func (ix *Index) FileKeys(path string) []events.Key {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	if f := ix.files[path]; f != nil {
		return f.keys()
	}
	return nil
}

// Get returns the entry of key.
func (ix *Index) Get(key events.Key) (Entry, bool) {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	e := ix.entries.get(key.Canonical())
	if e == nil {
		return Entry{}, false
	}
	return ix.export(e), true
}

// Hash returns the hash of key's definition in force, "" if it has none or
// is not declared. It copies nothing: the coordinator reads it on every
// reconcile.
func (ix *Index) Hash(key events.Key) string {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	if e := ix.entries.get(key.Canonical()); e != nil {
		return e.hash
	}
	return ""
}

// List returns the entries of kind (every kind if empty), sorted by key.
func (ix *Index) List(kind string) []Entry {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	out := make([]Entry, 0, ix.entries.n)
	for e := range ix.entries.all() {
		if kind == "" || e.key.Kind == kind {
			out = append(out, ix.export(e))
		}
	}
	slices.SortFunc(out, func(a, b Entry) int { return events.CompareKeys(a.Key, b.Key) })
	return out
}

// Keys returns the keys of kind (every kind if empty), sorted. It copies
// no entry, and sorts only when the order kept since the last Keys was
// lost: the workflow engine lists the keys after every burst.
func (ix *Index) Keys(kind string) []events.Key {
	ix.mu.RLock()
	if ix.sortedOK {
		defer ix.mu.RUnlock()
		return ix.sortedOf(kind)
	}
	ix.mu.RUnlock()
	ix.mu.Lock()
	defer ix.mu.Unlock()
	ix.sortKeys()
	return ix.sortedOf(kind)
}

// sortedOf copies the keys of kind (every kind if empty) from sorted.
// Called with mu held and sortedOK.
func (ix *Index) sortedOf(kind string) []events.Key {
	lo, hi := 0, len(ix.sorted)
	if kind != "" {
		// Keys of one kind are contiguous: their spellings share the
		// prefix "kind/".
		lo = slices.IndexFunc(ix.sorted, func(e *entry) bool { return e.key.Kind == kind })
		if lo < 0 {
			return []events.Key{}
		}
		hi = lo
		for hi < len(ix.sorted) && ix.sorted[hi].key.Kind == kind {
			hi++
		}
	}
	out := make([]events.Key, hi-lo)
	for i, e := range ix.sorted[lo:hi] {
		out[i] = e.key
	}
	return out
}

// Named returns the keys of kind called name, one per namespace that has
// it, in Keys' order. It looks up each namespace of kind, not every key.
func (ix *Index) Named(kind, name string) []events.Key {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	var out []events.Key
	for _, ns := range slices.Sorted(maps.Keys(ix.namespaces[kind])) {
		if k := events.NewKey(kind, ns, name).Canonical(); ix.entries.get(k) != nil {
			out = append(out, k)
		}
	}
	return out
}

// countNamespace counts k's entry in or out of its namespace. Called with
// mu held.
func (ix *Index) countNamespace(k events.Key, delta int) {
	byNS := ix.namespaces[k.Kind]
	if byNS == nil {
		byNS = map[string]int{}
		ix.namespaces[k.Kind] = byNS
	}
	if byNS[k.Namespace] += delta; byNS[k.Namespace] <= 0 {
		delete(byNS, k.Namespace)
	}
}

// Object returns the definition in force of key, nil if it has none, and
// whether key is declared. It copies nothing: the definition is shared,
// to be read and never changed.
func (ix *Index) Object(key events.Key) (any, bool) {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	if e := ix.entries.get(key.Canonical()); e != nil {
		return e.object, true
	}
	return nil, false
}

// sortKeys makes sorted hold every entry in order. Called with mu held.
func (ix *Index) sortKeys() {
	if ix.sortedOK {
		return
	}
	ix.sorted = slices.AppendSeq(make([]*entry, 0, ix.entries.n), ix.entries.all())
	slices.SortFunc(ix.sorted, func(a, b *entry) int { return events.CompareKeys(a.key, b.key) })
	ix.sortedOK = true
}

// noteCreated keeps sorted in order as e is created. Called with mu held.
func (ix *Index) noteCreated(e *entry) {
	if !ix.sortedOK {
		return
	}
	if n := len(ix.sorted); n > 0 && events.CompareKeys(ix.sorted[n-1].key, e.key) >= 0 {
		ix.sorted, ix.sortedOK = nil, false
		return
	}
	ix.sorted = append(ix.sorted, e)
}

// Files returns the paths the index knows, sorted.
func (ix *Index) Files() []string {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	out := make([]string, 0, len(ix.files))
	for p := range ix.files {
		out = append(out, p)
	}
	slices.Sort(out)
	return out
}

// HasFile reports whether the index knows path.
func (ix *Index) HasFile(path string) bool {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	return ix.files[path] != nil
}

// CountFilesIn returns how many of the paths the index knows are in the
// directory dir (path.Dir of them is dir), without listing them.
func (ix *Index) CountFilesIn(dir string) int {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	n := 0
	for p := range ix.files {
		if path.Dir(p) == dir {
			n++
		}
	}
	return n
}

// export spells e out as an Entry, its own copy of the files. Called with
// mu held.
func (ix *Index) export(e *entry) Entry {
	return Entry{Key: e.key, Object: e.object, Hash: e.hash, Files: slices.Clone(ix.filesOf(e)), Err: ix.errOf(e), Warnings: ix.warnings[e]}
}

// filesOf returns the files declaring e, sorted; the list of a conflict
// is the index's, not to be changed. Called with mu held.
func (ix *Index) filesOf(e *entry) []string {
	if e.file != nil {
		return []string{e.file.path}
	}
	return ix.conflicts[e.key].files
}

// errOf says why the files do not yield a good definition of e now: the
// conflict, the file's error, or its document's. Called with mu held.
func (ix *Index) errOf(e *entry) error {
	switch {
	case e.file == nil:
		return ix.conflicts[e.key].err
	case e.file.err() != nil:
		return e.file.err()
	}
	if own := e.file.slotOf(e.key).own; own != nil {
		return own.err
	}
	return nil
}

// claims are the files declaring some keys after a change, made from the
// entries' files before it. A list is copied before it changes, never
// changed in place: a conflict's list before the change stays, to compare.
type claims struct {
	ix    *Index
	files map[events.Key][]string
}

func (ix *Index) claimsOf(n int) claims {
	return claims{ix: ix, files: make(map[events.Key][]string, n)}
}

// of returns the files declaring k, sorted.
func (c claims) of(k events.Key) []string {
	if files, ok := c.files[k]; ok {
		return files
	}
	if e := c.ix.entries.get(k); e != nil {
		return c.ix.filesOf(e)
	}
	return nil
}

func (c claims) add(k events.Key, path string) {
	files := c.of(k)
	if i, found := slices.BinarySearch(files, path); !found {
		files = slices.Insert(slices.Clip(files), i, path)
	}
	c.files[k] = files
}

func (c claims) drop(k events.Key, path string) {
	files := c.of(k)
	if i, found := slices.BinarySearch(files, path); found {
		files = slices.Delete(slices.Clone(files), i, i+1)
	}
	c.files[k] = files
}

// refresh recomputes the entries of keys from their claims and reports
// those that changed. path is the file that prompted it, named in deletes;
// the entry of a key it declares first is in its document.
func (ix *Index) refresh(keys []events.Key, path string, claims claims) []Change {
	slices.SortFunc(keys, events.CompareKeys)
	keys = slices.Compact(keys)
	var changes []Change
	for _, k := range keys {
		e := ix.entries.get(k)
		existed := e != nil
		files := claims.of(k)
		if len(files) == 0 {
			if existed {
				ix.entries.remove(e)
				delete(ix.conflicts, k)
				delete(ix.warnings, e)
				ix.sorted, ix.sortedOK = nil, false
				ix.countNamespace(k, -1)
				changes = append(changes, Change{Key: k, Op: events.OperationDelete, File: path})
			}
			continue
		}
		var prevHash, prevErr string
		var prevFiles []string
		if existed {
			// Before the change: e's file is the one it had, which a
			// change replaces in files but never alters.
			prevHash, prevErr, prevFiles = e.hash, errText(ix.errOf(e)), ix.filesOf(e)
		} else {
			e = ix.files[path].slotOf(k).e
		}
		if len(files) > 1 {
			// The definition in force before the conflict stays.
			e.file = nil
			ix.conflicts[k] = conflict{files: files,
				err: fmt.Errorf("%s is declared by more than one file: %s; remove or rename all but one", k, strings.Join(files, ", "))}
		} else {
			delete(ix.conflicts, k)
			e.file = ix.files[files[0]]
			if took, ok := e.file.settle(e); ok {
				ix.setWarnings(e, took)
			}
		}
		if !existed {
			ix.entries.add(e)
			ix.noteCreated(e)
			ix.countNamespace(k, 1)
			changes = append(changes, Change{Key: k, Op: events.OperationCreate, Hash: e.hash, File: files[0]})
			continue
		}
		if prevHash != e.hash || prevErr != errText(ix.errOf(e)) || !slices.Equal(prevFiles, files) {
			changes = append(changes, Change{Key: k, Op: events.OperationUpdate, Hash: e.hash, File: files[0]})
		}
	}
	return changes
}

// setWarnings records the warnings of e's definition in force. Called
// with mu held.
func (ix *Index) setWarnings(e *entry, warnings []string) {
	if len(warnings) == 0 {
		delete(ix.warnings, e)
		return
	}
	ix.warnings[e] = warnings
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
