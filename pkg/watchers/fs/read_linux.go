package fs

import (
	iofs "io/fs"
	"syscall"

	"golang.org/x/sys/unix"
)

// readDefinition reads the regular file at abs, through symlinks, with
// four system calls: open, fstat, one read of the size fstat gave, close.
// os.ReadFile's way also asks the poller to take the file (refused, for a
// regular file) and reads once more to find the end: six calls a file
// where four do, on a cold start's path. Anything but
// a regular file is an error (notRegular).
func readDefinition(abs string) ([]byte, fileStamp, error) {
	fd, err := retryEINTR(func() (int, error) {
		return syscall.Open(abs, syscall.O_RDONLY|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
	})
	if err != nil {
		return nil, fileStamp{}, &iofs.PathError{Op: "open", Path: abs, Err: err}
	}
	defer syscall.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return nil, fileStamp{}, &iofs.PathError{Op: "stat", Path: abs, Err: err}
	}
	if err := notRegular(abs, fileType(st.Mode)); err != nil {
		return nil, fileStamp{}, err
	}
	// One byte more than the file holds, so that a file that grew since
	// fstat fills the buffer and is read on to its end.
	buf := make([]byte, min(max(st.Size, 0), maxFileSize)+1)
	n := 0
	for {
		if n == len(buf) {
			if n > maxFileSize {
				return nil, fileStamp{}, tooLarge(abs)
			}
			buf = append(buf, make([]byte, min(len(buf), maxFileSize+1-len(buf)))...)
		}
		m, err := retryEINTR(func() (int, error) { return syscall.Read(fd, buf[n:]) })
		if err != nil {
			return nil, fileStamp{}, &iofs.PathError{Op: "read", Path: abs, Err: err}
		}
		n += m
		if m == 0 || int64(n) == st.Size && n < len(buf) {
			// At the end, or holding the size fstat gave without filling
			// the buffer: what the stamp describes.
			return buf[:n], stampOfStat(&st), nil
		}
	}
}

// retryEINTR calls f until it is not interrupted by a signal, as package os
// does for its system calls.
func retryEINTR(f func() (int, error)) (int, error) {
	for {
		n, err := f()
		if err != syscall.EINTR {
			return n, err
		}
	}
}

// fileType is the type bits of a stat(2) mode as an iofs.FileMode, as
// package os gives them.
func fileType(mode uint32) iofs.FileMode {
	switch mode & syscall.S_IFMT {
	case syscall.S_IFREG:
		return 0
	case syscall.S_IFDIR:
		return iofs.ModeDir
	case syscall.S_IFIFO:
		return iofs.ModeNamedPipe
	case syscall.S_IFSOCK:
		return iofs.ModeSocket
	case syscall.S_IFCHR:
		return iofs.ModeDevice | iofs.ModeCharDevice
	case syscall.S_IFBLK:
		return iofs.ModeDevice
	case syscall.S_IFLNK:
		return iofs.ModeSymlink
	}
	return iofs.ModeIrregular
}
