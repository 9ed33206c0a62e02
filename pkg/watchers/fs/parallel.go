package fs

import (
	"runtime"
	"sync"
)

// readChunk is how many files recheckFiles reads and decodes at once before
// it applies them: enough to keep every core busy, few enough that the
// decoded documents waiting for their turn stay a small part of the heap.
const readChunk = 256

// recheckFiles rechecks the files a directory listing found, in that
// order, skipping those whose stamp has not changed since their last read
// (stamps.go). It reads and decodes them on every core, with the same
// changes to the index and the same events as one after another: decoding
// is a large share of a cold start's CPU, and the listing's files are
// independent until they reach the index.
//
// Two chunks are in flight: while this goroutine applies one, in the
// listing's order, the workers read the next. Applying a chunk (the index,
// the stamps, the events) would leave the workers idle if it came between
// the chunks' reads.
func (w *Watcher) recheckFiles(files []string) {
	workers := min(runtime.GOMAXPROCS(0), len(files))
	if workers < 2 || len(files) < 2*workers {
		for _, rel := range files {
			w.apply(rel, w.read(rel, w.stamps[rel]))
		}
		return
	}
	var spare *chunkRead
	next := func() *chunkRead {
		if len(files) == 0 {
			return nil
		}
		c := spare
		spare = nil
		if c == nil {
			c = &chunkRead{results: make([]readResult, min(readChunk, len(files))), known: make([]stampPrint, min(readChunk, len(files)))}
		}
		n := min(len(c.results), len(files))
		c.start(w, files[:n], workers)
		files = files[n:]
		return c
	}
	for c := next(); c != nil; {
		following := next() // read while c is applied
		c.wait()
		for j, rel := range c.files {
			w.apply(rel, c.results[j])
			c.results[j] = readResult{}
		}
		c, spare = following, c
	}
}

// chunkRead is one chunk of a listing being read by the workers.
type chunkRead struct {
	files   []string
	results []readResult // results[j] is what files[j] held
	known   []stampPrint // known[j] is the print of files[j]'s last read's stamp
	done    sync.WaitGroup
}

// start reads files on workers goroutines. The stamps are taken here, on
// the watcher's goroutine: the workers touch no state of the watcher's,
// and the chunk being applied meanwhile changes only its own files'.
func (c *chunkRead) start(w *Watcher, files []string, workers int) {
	c.files = files
	for j, rel := range files {
		c.known[j] = w.stamps[rel]
	}
	for i := range workers {
		c.done.Go(func() {
			for j := i; j < len(files); j += workers {
				c.results[j] = w.read(files[j], c.known[j])
			}
		})
	}
}

// wait returns once every file of the chunk is read.
func (c *chunkRead) wait() { c.done.Wait() }
