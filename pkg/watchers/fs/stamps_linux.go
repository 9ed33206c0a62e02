package fs

import (
	iofs "io/fs"

	"golang.org/x/sys/unix"
)

// stampOfStat is the stamp of the file stat(2) described in st.
func stampOfStat(st *unix.Stat_t) fileStamp {
	return fileStamp{dev: st.Dev, ino: st.Ino, size: st.Size, mtime: st.Mtim.Nano(), ctime: st.Ctim.Nano()}
}

// statStamp is the stamp of the file at abs, through symlinks. It calls
// stat(2) itself: os.Stat's FileInfo would be a third of a rescan's
// garbage.
func statStamp(abs string) (fileStamp, error) {
	var st unix.Stat_t
	if err := unix.Stat(abs, &st); err != nil {
		return fileStamp{}, &iofs.PathError{Op: "stat", Path: abs, Err: err}
	}
	return stampOfStat(&st), nil
}
