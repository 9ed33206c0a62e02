package main

import (
	"bufio"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"testing"
)

// record144 is 144 bytes, a size class of its own.
type record144 struct {
	_ *record144
	_ [136]byte
}

// The test's own heap, dumped: the 20,000 records it keeps are in the
// 144-byte class, in spans they fill.
func TestReadsTheClassesOfALiveHeap(t *testing.T) {
	kept := make([]*record144, 20_000)
	for i := range kept {
		kept[i] = &record144{}
	}
	path := filepath.Join(t.TempDir(), "heap.dump")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	runtime.GC()
	debug.WriteHeapDump(f.Fd())
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	runtime.KeepAlive(kept)

	f, err = os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	classes, _, err := read(bufio.NewReader(f))
	if err != nil {
		t.Fatal(err)
	}
	c := classes[144]
	if c == nil || c.objects < len(kept) {
		t.Fatalf("class 144: %+v, want at least %d objects", c, len(kept))
	}
	// 56 records fill an 8 KiB span; the spans hold little else.
	if c.spans > c.objects/56+20 {
		t.Errorf("class 144: %d objects in %d spans", c.objects, c.spans)
	}
	if c.liveBytes != c.objects*144 || c.unused() < 0 {
		t.Errorf("class 144: %d live bytes, %d unused", c.liveBytes, c.unused())
	}
}

func TestRefusesWhatIsNotAHeapDump(t *testing.T) {
	path := filepath.Join(t.TempDir(), "not.dump")
	if err := os.WriteFile(path, []byte("hello"), 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, _, err := read(bufio.NewReader(f)); err == nil {
		t.Error("read a file that is not a heap dump")
	}
}
