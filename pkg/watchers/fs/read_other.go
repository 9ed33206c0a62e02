//go:build !linux

package fs

import (
	"io"
	"os"
	"syscall"
)

// readDefinition reads the regular file at abs, through symlinks. Anything
// but a regular file is an error (notRegular). The file is opened without
// blocking, so that a named pipe is found out before its read could block.
func readDefinition(abs string) ([]byte, fileStamp, error) {
	f, err := os.OpenFile(abs, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, fileStamp{}, err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return nil, fileStamp{}, err
	}
	if err := notRegular(abs, info.Mode().Type()); err != nil {
		return nil, fileStamp{}, err
	}
	data, err := io.ReadAll(io.LimitReader(f, maxFileSize+1))
	if err == nil && len(data) > maxFileSize {
		err = tooLarge(abs)
	}
	return data, fileStamp{}, err
}
