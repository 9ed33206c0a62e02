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
// was a third of the CPU of a cold start with 100,000 files, and the
// listing's files are independent until they reach the index.
func (w *Watcher) recheckFiles(files []string) {
	workers := min(runtime.GOMAXPROCS(0), len(files))
	if workers < 2 || len(files) < 2*workers {
		for _, rel := range files {
			w.apply(rel, w.read(rel, w.stamps[rel]))
		}
		return
	}
	results := make([]readResult, min(readChunk, len(files)))
	known := make([]fileStamp, len(results))
	for len(files) > 0 {
		chunk := files[:min(readChunk, len(files))]
		files = files[len(chunk):]
		for j, rel := range chunk {
			known[j] = w.stamps[rel]
		}
		var next sync.WaitGroup
		for i := range workers {
			next.Go(func() {
				for j := i; j < len(chunk); j += workers {
					results[j] = w.read(chunk[j], known[j])
				}
			})
		}
		next.Wait()
		for j, rel := range chunk {
			w.apply(rel, results[j])
			results[j] = readResult{}
		}
	}
}
