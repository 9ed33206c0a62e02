package fs

import (
	"bytes"
	"encoding/binary"
	iofs "io/fs"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// direntListing lists a directory with getdents64(2) into the watcher's
// buffer, and stats its entries relative to it: an entry costs no string
// and no path (listing.go).
type direntListing struct {
	fd       int
	abs      string
	buf      []byte
	pos, end int
	failed   error
}

// direntBufSize is the listings' buffer: a few hundred entries a call.
const direntBufSize = 32 << 10

// The fields of struct linux_dirent64 that next reads, where package
// syscall's Dirent, its layout, puts them.
const (
	direntIno    = int(unsafe.Offsetof(syscall.Dirent{}.Ino))
	direntReclen = int(unsafe.Offsetof(syscall.Dirent{}.Reclen))
	direntName   = int(unsafe.Offsetof(syscall.Dirent{}.Name))
)

// openListing starts a listing of the directory abs, through symlinks.
func (w *Watcher) openListing(abs string) (dirListing, error) {
	fd, err := retryEINTR(func() (int, error) {
		return syscall.Open(abs, syscall.O_RDONLY|syscall.O_DIRECTORY|syscall.O_CLOEXEC, 0)
	})
	if err != nil {
		return nil, &iofs.PathError{Op: "open", Path: abs, Err: err}
	}
	if w.direntBuf == nil {
		w.direntBuf = make([]byte, direntBufSize)
	}
	return &direntListing{fd: fd, abs: abs, buf: w.direntBuf}, nil
}

func (l *direntListing) next() ([]byte, bool) {
	for {
		if l.pos >= l.end {
			if l.failed != nil {
				return nil, false
			}
			n, err := retryEINTR(func() (int, error) { return syscall.ReadDirent(l.fd, l.buf) })
			if err != nil {
				l.failed = &iofs.PathError{Op: "readdirent", Path: l.abs, Err: err}
				return nil, false
			}
			if n <= 0 {
				return nil, false
			}
			l.pos, l.end = 0, n
		}
		rec := l.buf[l.pos:l.end]
		if len(rec) < direntName {
			l.failed = &iofs.PathError{Op: "readdirent", Path: l.abs, Err: syscall.EIO}
			return nil, false
		}
		reclen := int(binary.NativeEndian.Uint16(rec[direntReclen:]))
		if reclen < direntName || reclen > len(rec) {
			l.failed = &iofs.PathError{Op: "readdirent", Path: l.abs, Err: syscall.EIO}
			return nil, false
		}
		l.pos += reclen
		name := rec[direntName:reclen]
		if i := bytes.IndexByte(name, 0); i >= 0 {
			name = name[:i]
		}
		if binary.NativeEndian.Uint64(rec[direntIno:]) == 0 || string(name) == "." || string(name) == ".." {
			continue // a deleted entry, or the directory's own links
		}
		return name, true
	}
}

// stamp stats name relative to the listed directory: no absolute path is
// made, and only stat(2)'s own copy of the name (a few bytes) is
// allocated.
func (l *direntListing) stamp(name []byte) (fileStamp, error) {
	var st unix.Stat_t
	if err := unix.Fstatat(l.fd, string(name), &st, 0); err != nil {
		return fileStamp{}, err
	}
	return stampOfStat(&st), nil
}

func (l *direntListing) err() error { return l.failed }

// moved compares the directory the listing opened with the one its path
// names now, through symlinks as it was opened.
func (l *direntListing) moved() bool {
	var opened, now unix.Stat_t
	if unix.Fstat(l.fd, &opened) != nil || unix.Stat(l.abs, &now) != nil {
		return true
	}
	return opened.Dev != now.Dev || opened.Ino != now.Ino
}

func (l *direntListing) close() error { return syscall.Close(l.fd) }
