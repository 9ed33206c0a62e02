//go:build !linux

package fs

import (
	"os"
)

// statStamp is the stamp of the file at abs: none here.
func statStamp(abs string) (fileStamp, error) {
	_, err := os.Stat(abs)
	return fileStamp{}, err
}
