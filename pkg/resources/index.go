package resources

import (
	"fmt"
	"maps"
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
	// Hash identifies Object's content.
	Hash string
	// Err says why this document is not usable (a validation error naming
	// file, line and field); the key is still known.
	Err error
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
type Index struct {
	mu    sync.RWMutex
	files map[string]*fileState
	// entries holds a resource while a file declares it; its Files are the
	// files that do, sorted. There is no other record of who declares a
	// key: a map of claims beside the entries held the same lists again,
	// 14 MB with 100,000 resources.
	entries map[events.Key]*Entry
	// sorted holds the keys of entries in events.CompareKeys order while
	// sortedOK; a delete, or a create that does not sort last, clears it
	// and the next Keys sorts again. A listing creates its keys in the
	// order of its files, which is theirs, so a cold start never sorts:
	// the workflow engine lists the keys after every burst, and sorting
	// 100,000 keys each time was a tenth of that start's CPU.
	sorted   []events.Key
	sortedOK bool
	// namespaces counts the entries of each kind in each namespace, so that
	// Named finds a name without listing every key.
	namespaces map[string]map[string]int
}

// fileState is what one file declares.
type fileState struct {
	// docs is the last parse of the file that could be read, one per key.
	// A slice, not a map: a file declares one document or a few, and a
	// map of one costs a kilobyte (issue #7's heap profile: 14.5 of 60 MB
	// with 10,000 files).
	docs []Doc
	// byKey indexes docs once there are more than smallFile of them, so
	// that a file of thousands of documents is not searched linearly.
	byKey map[events.Key]int
	// err is set while the file cannot be read or parsed; docs then keeps
	// the last parse that could.
	err error
}

// New returns an empty index.
func New() *Index {
	return &Index{files: map[string]*fileState{}, entries: map[events.Key]*Entry{}, sortedOK: true,
		namespaces: map[string]map[string]int{}}
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
		oldKeys = keysOf(old.docs)
	}
	next := &fileState{}
	switch {
	case err != nil && old != nil:
		next.docs, next.byKey, next.err = old.docs, old.byKey, err
	case err != nil:
		fallback = fallback.Canonical()
		next.docs = []Doc{{Key: fallback, Err: err}}
	default:
		next.docs = make([]Doc, 0, len(docs))
		for _, d := range docs {
			d.Key = d.Key.Canonical()
			next.set(d)
		}
	}
	ix.files[path] = next
	newKeys := keysOf(next.docs)
	claims := ix.claimsOf(len(oldKeys) + len(newKeys))
	for _, k := range oldKeys {
		if _, still := next.doc(k); !still {
			claims.drop(k, path)
		}
	}
	for _, k := range newKeys {
		claims.add(k, path)
	}
	return ix.refresh(append(oldKeys, newKeys...), path, claims)
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
	keys := keysOf(old.docs)
	claims := ix.claimsOf(len(keys))
	for _, k := range keys {
		claims.drop(k, path)
	}
	return ix.refresh(keys, path, claims)
}

// FileKeys returns the keys path declares now, in the order of its
// documents; none if the index does not know path.
func (ix *Index) FileKeys(path string) []events.Key {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	if f := ix.files[path]; f != nil {
		return keysOf(f.docs)
	}
	return nil
}

// Get returns the entry of key.
func (ix *Index) Get(key events.Key) (Entry, bool) {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	e, ok := ix.entries[key.Canonical()]
	if !ok {
		return Entry{}, false
	}
	return e.clone(), true
}

// Hash returns the hash of key's definition in force, "" if it has none or
// is not declared. It copies nothing: the coordinator reads it on every
// reconcile.
func (ix *Index) Hash(key events.Key) string {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	if e := ix.entries[key.Canonical()]; e != nil {
		return e.Hash
	}
	return ""
}

// List returns the entries of kind (every kind if empty), sorted by key.
func (ix *Index) List(kind string) []Entry {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	out := make([]Entry, 0, len(ix.entries))
	for k, e := range ix.entries {
		if kind == "" || k.Kind == kind {
			out = append(out, e.clone())
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
	if kind == "" {
		return append(make([]events.Key, 0, len(ix.sorted)), ix.sorted...)
	}
	// Keys of one kind are contiguous: their spellings share the prefix
	// "kind/".
	lo := slices.IndexFunc(ix.sorted, func(k events.Key) bool { return k.Kind == kind })
	if lo < 0 {
		return []events.Key{}
	}
	hi := lo
	for hi < len(ix.sorted) && ix.sorted[hi].Kind == kind {
		hi++
	}
	return append(make([]events.Key, 0, hi-lo), ix.sorted[lo:hi]...)
}

// Named returns the keys of kind called name, one per namespace that has
// it, in Keys' order. It looks up each namespace of kind, not every key.
func (ix *Index) Named(kind, name string) []events.Key {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	var out []events.Key
	for _, ns := range slices.Sorted(maps.Keys(ix.namespaces[kind])) {
		if k := events.NewKey(kind, ns, name).Canonical(); ix.entries[k] != nil {
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
	if e := ix.entries[key.Canonical()]; e != nil {
		return e.Object, true
	}
	return nil, false
}

// sortKeys makes sorted hold every key in order. Called with mu held.
func (ix *Index) sortKeys() {
	if ix.sortedOK {
		return
	}
	ix.sorted = slices.AppendSeq(make([]events.Key, 0, len(ix.entries)), maps.Keys(ix.entries))
	slices.SortFunc(ix.sorted, events.CompareKeys)
	ix.sortedOK = true
}

// noteCreated keeps sorted in order as k is created. Called with mu held.
func (ix *Index) noteCreated(k events.Key) {
	if !ix.sortedOK {
		return
	}
	if n := len(ix.sorted); n > 0 && events.CompareKeys(ix.sorted[n-1], k) >= 0 {
		ix.sorted, ix.sortedOK = nil, false
		return
	}
	ix.sorted = append(ix.sorted, k)
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

func (e *Entry) clone() Entry {
	c := *e
	c.Files = slices.Clone(e.Files)
	return c
}

// claims are the files declaring some keys after a change, made from the
// entries' Files before it. A list is copied before it changes, never
// changed in place: the entry before the change keeps its own, to compare.
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
	if e := c.ix.entries[k]; e != nil {
		return e.Files
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
// those that changed. path is the file that prompted it, named in deletes.
func (ix *Index) refresh(keys []events.Key, path string, claims claims) []Change {
	slices.SortFunc(keys, events.CompareKeys)
	keys = slices.Compact(keys)
	var changes []Change
	for _, k := range keys {
		prev, existed := ix.entries[k]
		files := claims.of(k)
		if len(files) == 0 {
			if existed {
				delete(ix.entries, k)
				ix.sorted, ix.sortedOK = nil, false
				ix.countNamespace(k, -1)
				changes = append(changes, Change{Key: k, Op: events.OperationDelete, File: path})
			}
			continue
		}
		next := &Entry{Key: k, Files: files}
		if existed {
			next.Object, next.Hash = prev.Object, prev.Hash // the last good stays in force
		}
		if len(files) > 1 {
			next.Err = fmt.Errorf("%s is declared by more than one file: %s; remove or rename all but one", k, strings.Join(files, ", "))
		} else {
			f := ix.files[files[0]]
			d, _ := f.doc(k)
			switch {
			case f.err != nil:
				next.Err = f.err
			case d.Err != nil:
				next.Err = d.Err
			case existed && prev.Object != nil && prev.Hash == d.Hash:
				// The same content read again (a rescan, a save without
				// changes): the definition in force stays the same object,
				// so that what was built from it (a workflow's tool) holds.
			default:
				next.Object, next.Hash = d.Object, d.Hash
			}
		}
		ix.entries[k] = next
		if !existed {
			ix.noteCreated(k)
			ix.countNamespace(k, 1)
		}
		switch {
		case !existed:
			changes = append(changes, Change{Key: k, Op: events.OperationCreate, Hash: next.Hash, File: files[0]})
		case prev.Hash != next.Hash || errText(prev.Err) != errText(next.Err) || !slices.Equal(prev.Files, next.Files):
			changes = append(changes, Change{Key: k, Op: events.OperationUpdate, Hash: next.Hash, File: files[0]})
		}
	}
	return changes
}

// smallFile is the most documents a fileState searches linearly.
const smallFile = 8

// set records d, replacing an earlier document of its key: of two
// documents with one key in one file, the later is what the file says.
func (f *fileState) set(d Doc) {
	if i := f.find(d.Key); i >= 0 {
		f.docs[i] = d
		return
	}
	f.docs = append(f.docs, d)
	if f.byKey != nil {
		f.byKey[d.Key] = len(f.docs) - 1
	} else if len(f.docs) > smallFile {
		f.byKey = make(map[events.Key]int, len(f.docs))
		for i, d := range f.docs {
			f.byKey[d.Key] = i
		}
	}
}

// doc returns the document of k.
func (f *fileState) doc(k events.Key) (Doc, bool) {
	if i := f.find(k); i >= 0 {
		return f.docs[i], true
	}
	return Doc{}, false
}

// find returns the position of k's document in docs, or -1.
func (f *fileState) find(k events.Key) int {
	if f.byKey != nil {
		if i, ok := f.byKey[k]; ok {
			return i
		}
		return -1
	}
	for i := range f.docs {
		if f.docs[i].Key == k {
			return i
		}
	}
	return -1
}

func keysOf(docs []Doc) []events.Key {
	keys := make([]events.Key, len(docs))
	for i, d := range docs {
		keys[i] = d.Key
	}
	return keys
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
