package resources

import "github.com/musterd/musterd/pkg/events"

// fileState is what one file declares: its documents, the last parse of
// the file that could be read, one per key.
//
// The first document is held in place and the rest, with what is rare,
// behind more: most files declare one document and read fine, and then
// cost 48 bytes, path included, where a slice of their documents and the
// fields for many or for an error made 80 (BenchmarkRetainedPerResource).
type fileState struct {
	path string
	// first is the first document; its e is nil while there is none.
	first slot
	more  *moreDocs
}

// moreDocs is what a file has beyond one document that reads fine.
type moreDocs struct {
	// docs are the documents after the first. A slice, not a map: a file
	// declares one document or a few, and a map of one costs a kilobyte,
	// a large share of the index's memory when multiplied by every file.
	docs []slot
	// byKey indexes the documents, first 0, once there are more than
	// smallFile of them, so that a file of thousands of documents is not
	// searched linearly.
	byKey map[events.Key]int
	// err is set while the file cannot be read or parsed; the documents
	// are then the last parse that could.
	err error
}

// slot is one document of a file: the entry of its key, and what the
// document says unless that is the definition in force without error.
type slot struct {
	e *entry
	// own is what the document says; nil when it is the entry's object
	// and hash, without error, the common case, which then costs nothing
	// beside the entry. Only the entry's one file sets the definition in
	// force, from its document, so a document that was it stays it.
	own *said
}

// said is what a document says when it is not the definition in force.
type said struct {
	object   any
	hash     string
	err      error
	warnings []string
}

// smallFile is the most documents a fileState searches linearly.
const smallFile = 8

// drop clears f, a state the index no longer holds (nothing of the index
// points to it once the change that replaced it is refreshed): it may
// share its allocation with an entry that outlives it (fileOfOne), and
// must then keep nothing of its own alive. f may be nil.
func (f *fileState) drop() {
	if f != nil {
		*f = fileState{}
	}
}

// err says why the file cannot be read or parsed now; nil if it can.
func (f *fileState) err() error {
	if f.more == nil {
		return nil
	}
	return f.more.err
}

// keepBroken makes f old's documents, with err, the reason the file
// cannot be read or parsed now.
func (f *fileState) keepBroken(old *fileState, err error) {
	f.first, f.more = old.first, &moreDocs{err: err}
	if old.more != nil {
		f.more.docs, f.more.byKey = old.more.docs, old.more.byKey
	}
}

// set records s, replacing an earlier document of its key: of two
// documents with one key in one file, the later is what the file says.
func (f *fileState) set(s slot) {
	if at := f.slotOf(s.e.key); at != nil {
		*at = s
		return
	}
	if f.first.e == nil {
		f.first = s
		return
	}
	if f.more == nil {
		f.more = &moreDocs{}
	}
	m := f.more
	m.docs = append(m.docs, s)
	if m.byKey != nil {
		m.byKey[s.e.key] = len(m.docs)
	} else if len(m.docs) >= smallFile {
		m.byKey = make(map[events.Key]int, len(m.docs)+1)
		m.byKey[f.first.e.key] = 0
		for i, s := range m.docs {
			m.byKey[s.e.key] = i + 1
		}
	}
}

// slotOf returns the document of k, nil if f has none.
func (f *fileState) slotOf(k events.Key) *slot {
	if f.first.e == nil {
		return nil
	}
	if f.first.e.key == k {
		return &f.first
	}
	if f.more == nil {
		return nil
	}
	if f.more.byKey != nil {
		if i, ok := f.more.byKey[k]; ok {
			return &f.more.docs[i-1]
		}
		return nil
	}
	for i := range f.more.docs {
		if f.more.docs[i].e.key == k {
			return &f.more.docs[i]
		}
	}
	return nil
}

// keys returns the keys f declares, in the order of its documents; an
// empty list, not nil, if none.
func (f *fileState) keys() []events.Key {
	if f.first.e == nil {
		return []events.Key{}
	}
	var more []slot
	if f.more != nil {
		more = f.more.docs
	}
	keys := make([]events.Key, 0, 1+len(more))
	keys = append(keys, f.first.e.key)
	for _, s := range more {
		keys = append(keys, s.e.key)
	}
	return keys
}

// settle makes f's document of e, f being the one file declaring it, the
// definition in force if it is good: the last good stays in force while
// the file or the document is broken. The same content read again (a
// rescan, a save without changes) keeps the definition in force the same
// object, so that what was built from it (a workflow's tool) holds.
// When the document becomes the definition in force, settle returns its
// warnings and true: the index keeps them beside the entry.
func (f *fileState) settle(e *entry) (warnings []string, took bool) {
	s := f.slotOf(e.key)
	if f.err() != nil || s.own == nil || s.own.err != nil {
		return nil, false
	}
	if e.object == nil || e.hash != s.own.hash {
		e.object, e.hash = s.own.object, s.own.hash
	}
	warnings = s.own.warnings
	s.own = nil
	return warnings, true
}
