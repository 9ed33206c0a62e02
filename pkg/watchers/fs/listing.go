package fs

import (
	"errors"
	"fmt"
	"path"
	"slices"
)

// The rescans' listing: a kind directory is read one entry at a time into
// a buffer the watcher keeps, and an entry whose stamp is what the last
// read kept is passed over without a string, a path or a FileInfo made
// for it.
//
// Why: listing by name, a periodic rescan of unchanged files makes garbage
// in proportion to the files (the directory's names and their sorted
// slice, each file's relative and absolute path and the copy of the latter
// that stat(2) takes, and the index's sorted list of files), once a
// minute. Collected only when the heap has doubled, it lifts the resident
// size of a daemon at rest well above where its start left it.
//
// How: scanDir lists sub and collects, as strings, only the definition
// files whose stamp differs from the kept one (or that have none: new,
// broken or just written), and counts the others. It reads those files
// again; and since a file's stamp is kept only while the index holds the
// file (noteStamp), the index then holds, of sub, every unchanged file and
// every collected one still there. When it holds no more files of sub
// than that, none is gone; only when it holds more does scanDir list sub
// once more, by name, to find which.

// dirListing is one reading of a kind directory. It is not safe for
// concurrent use.
type dirListing interface {
	// next returns the next entry's name, valid until the following call,
	// or false once the entries are over or reading them failed (err says
	// which).
	next() ([]byte, bool)
	// stamp returns the stamp of the file the entry name is, through
	// symlinks.
	stamp(name []byte) (fileStamp, error)
	err() error
	// moved reports whether the path the listing opened names another
	// directory now, or none: the listing read a directory that is no
	// longer the kind directory.
	moved() bool
	close() error
}

// A kind directory replaced while it is listed (mv new workflows, a
// ConfigMap's ..data link swapped, a directory removed) leaves the listing
// reading the directory it opened, and stamping its files: the old
// content. Trusting that listing would keep in the index definitions whose
// directory is gone, counted as unchanged, beside files read by path from
// the new one: a state that no moment on disk ever had, kept until an
// unrelated change brings a rescan. What a user who swaps a directory
// expects is that the scan converges on the directory the path names now.
// So a listing checks at its end that the path still names the directory
// it read; if not, it is thrown away and the path listed again, up to
// maxListings times. A directory swapped at every one of those listings is
// reported (errDirMoved): the scan changes nothing, so the last good state
// stays, and asks for the directory to be scanned again after the next
// quiet.

// errDirMoved is a listing's error when its directory was replaced while
// it was read.
var errDirMoved = errors.New("the directory was replaced while it was listed")

// maxListings bounds the listings of a directory that is replaced while
// listed, in one scan.
const maxListings = 3

// listStable runs list, a listing of sub that starts from scratch, until
// sub is not replaced while it runs, at most maxListings times.
func listStable(list func() error) error {
	for attempt := 1; ; attempt++ {
		err := list()
		if !errors.Is(err, errDirMoved) || attempt == maxListings {
			return err
		}
	}
}

// eachDefinition calls visit with the name of every definition file that
// the kind directory sub lists, valid during the call alone, and the
// listing, to stat it by.
func (w *Watcher) eachDefinition(sub string, visit func(l dirListing, name []byte)) error {
	l, err := w.openDir(sub)
	if err != nil {
		return err
	}
	for name, ok := l.next(); ok; name, ok = l.next() {
		if isDefinitionFile(string(name)) { // a short name is converted on the stack
			visit(l, name)
		}
	}
	err = l.err()
	if l.moved() { // whatever was read, or failed, was another directory's
		err = fmt.Errorf("%s: %w", sub, errDirMoved)
	}
	if cerr := l.close(); err == nil {
		err = cerr
	}
	return err
}

// listChanged lists the kind directory sub: the definition files whose
// stamp differs from the one kept of their last read, sorted, and how
// many others it lists, for which it makes no string.
func (w *Watcher) listChanged(sub string) (changed []string, unchanged int, err error) {
	rel := append(append(w.relBuf[:0], sub...), '/')
	prefix := len(rel)
	err = listStable(func() error {
		changed, unchanged = changed[:0], 0
		return w.eachDefinition(sub, func(l dirListing, name []byte) {
			rel = append(rel[:prefix], name...)
			if known := w.stamps[string(rel)]; known != 0 { // a map index converts without copying
				if now, err := l.stamp(name); err == nil && w.printOf(now) == known {
					unchanged++
					return
				}
			}
			changed = append(changed, string(rel))
		})
	})
	w.relBuf = rel
	if err != nil {
		return nil, 0, err
	}
	slices.Sort(changed)
	return changed, unchanged, nil
}

// listFiles lists the definition files of the kind directory sub, sorted.
func (w *Watcher) listFiles(sub string) ([]string, error) {
	var files []string
	if err := listStable(func() error {
		files = files[:0]
		return w.eachDefinition(sub, func(_ dirListing, name []byte) {
			files = append(files, sub+"/"+string(name))
		})
	}); err != nil {
		return nil, err
	}
	slices.Sort(files)
	return files, nil
}

// forgetUnlisted removes from the index the files of sub that listed, the
// sorted files of a listing of sub, does not hold.
func (w *Watcher) forgetUnlisted(sub string, listed []string) {
	for _, rel := range w.index.Files() {
		if path.Dir(rel) != sub {
			continue
		}
		for len(listed) > 0 && listed[0] < rel {
			listed = listed[1:]
		}
		if len(listed) == 0 || listed[0] != rel {
			delete(w.stamps, rel)
			w.publish(w.index.RemoveFile(rel))
		}
	}
}
