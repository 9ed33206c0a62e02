//go:build !linux

package fs

import "os"

// namesListing lists a directory through package os. Stamps are not kept
// on these systems (stamps_other.go), so no entry is ever stamped.
type namesListing struct {
	names []string
	i     int
}

// openListing lists the directory abs, through symlinks.
func (w *Watcher) openListing(abs string) (dirListing, error) {
	f, err := os.Open(abs)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	names, err := f.Readdirnames(-1)
	if err != nil {
		return nil, err
	}
	return &namesListing{names: names}, nil
}

func (l *namesListing) next() ([]byte, bool) {
	if l.i == len(l.names) {
		return nil, false
	}
	l.i++
	return []byte(l.names[l.i-1]), true
}

func (l *namesListing) stamp([]byte) (fileStamp, error) { return fileStamp{}, nil }
func (l *namesListing) err() error                      { return nil }
func (l *namesListing) close() error                    { return nil }

// moved is never true: these systems keep no stamps, so every listed file
// is read by its path, in the directory the path names then.
func (l *namesListing) moved() bool { return false }
