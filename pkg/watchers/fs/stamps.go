package fs

import (
	"hash/maphash"
	"time"
)

// The rescans' shortcut: a file whose stamp has not changed since it was
// last read is not read again.
//
// Why: the periodic rescan re-read and re-decoded every file. With 100,000
// definitions that is tens of seconds of CPU a minute and the garbage of a
// cold start each time, to find, nearly always, nothing.
//
// How: after each read of a file for a rescan or an event, the watcher
// keeps the file's stamp (device, inode, size, modification and change
// times, as fstat saw them before the read). A directory scan (the periodic
// rescan, a rescan after lost events, a directory's own events) stats each
// listed file and reads only those whose stamp differs. An event naming a
// file always reads it.
//
// A file's change time moves with every write and rename and cannot be set
// by its writer, and an atomic replace (an editor's rename, a ConfigMap's
// link swap) gives another inode. What a stamp can miss is a write of the
// same size within the same tick of the filesystem's clock as the write
// before it; so, as git does with racily clean files, a stamp is kept only
// if the file's times were racyMargin older than the end of its read, when
// any later write must leave a later time.

// What is kept of a stamp is its print, a 64-bit hash of its fields (zero
// for none), not the 40 bytes of its fields: a map of prints is well under
// half the size of a map of stamps. Two versions of a file whose
// stamps differ have one print once in 2⁶⁴; then only a rescan (an event
// always reads its file) takes the new version for the old, until the
// file's next change. rsync's quick check trusts size and modification
// time alone.

// racyMargin is how much older than its read a file's times must be for
// its stamp to be kept: several ticks of any filesystem's timestamps (FAT's
// are 2 s), and of the clock skew of a network filesystem's server.
const racyMargin = 5 * time.Second

// fileStamp is what fstat says of a file's version.
type fileStamp struct {
	dev, ino     uint64
	size         int64
	mtime, ctime int64 // nanoseconds since the epoch
}

// keepable reports whether s, of a file read until now, is older than
// margin, and so to be trusted at the next scan.
func (s fileStamp) keepable(now time.Time, margin time.Duration) bool {
	limit := now.Add(-margin).UnixNano()
	return s.ino != 0 && s.mtime < limit && s.ctime < limit
}

// stampPrint is what the watcher keeps of a stamp; 0 is none.
type stampPrint uint64

// printOf is s's print: never 0, so that a kept print is told from none.
func (w *Watcher) printOf(s fileStamp) stampPrint {
	return stampPrint(maphash.Comparable(w.stampSeed, s) | 1)
}

// noteStamp records, or forgets, rel's stamp after read gave r: kept when
// the file was read, whether or not it decoded (a broken file is not read
// again until it changes), and its stamp was keepable (read zeroes one
// that is not); forgotten when the file is gone or could not be read.
// A stamp is kept only while the index holds its file, which scanDir
// relies on (listing.go): apply puts every file it keeps a stamp of in
// the index, and whatever removes a file from the index forgets its stamp
// first.
func (w *Watcher) noteStamp(rel string, r readResult) {
	if r.gone || r.stamp == (fileStamp{}) {
		delete(w.stamps, rel)
		return
	}
	w.stamps[rel] = w.printOf(r.stamp)
}
