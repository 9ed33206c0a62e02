//go:build linux

package fs

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// FuzzDirentListingMatchesReadDir holds the getdents listing to os.ReadDir
// on directories whose entries the fuzzer names: its bytes, split at NUL,
// are the names ('/' made '_', at most 255 bytes, "." and ".." left out),
// and kinds alternates files, directories and symlinks. The fuzzer
// searches the names and their lengths for records the listing walks
// wrongly.
func FuzzDirentListingMatchesReadDir(f *testing.F) {
	f.Add([]byte("a\x00b.yaml\x00-leading\x00with\nnewline\x00\xff\xfe"), uint8(0))
	f.Add(bytes.Repeat([]byte("n"), 300), uint8(1))
	f.Add([]byte("x\x00y\x00z\x00x"), uint8(2))
	f.Fuzz(func(t *testing.T, names []byte, kinds uint8) {
		dir := t.TempDir()
		for i, raw := range bytes.Split(names, []byte{0}) {
			name := bytes.ReplaceAll(raw, []byte("/"), []byte("_"))
			if len(name) > 255 {
				name = name[:255]
			}
			if len(name) == 0 || string(name) == "." || string(name) == ".." {
				continue
			}
			path := filepath.Join(dir, string(name))
			if _, err := os.Lstat(path); err == nil {
				continue // a name given twice
			}
			var err error
			switch (int(kinds) + i) % 3 {
			case 0:
				err = os.WriteFile(path, raw, 0o600)
			case 1:
				err = os.Mkdir(path, 0o700)
			default:
				err = os.Symlink("target-"+string(rune('a'+i%26)), path)
			}
			if err != nil {
				t.Fatalf("making %q: %v", name, err)
			}
		}
		assertListingMatchesReadDir(t, dir)
	})
}
