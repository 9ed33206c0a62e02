package resources_test

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"runtime"
	"testing"

	"github.com/musterd/musterd/internal/memtest"
	"github.com/musterd/musterd/pkg/events"
	"github.com/musterd/musterd/pkg/resources"
)

// BenchmarkRetainedPerResource builds an index of 100,000 files of one
// document each, the common case, through SetFile in the order of the
// files as the fs watcher's cold start does, and reports the heap the
// index itself keeps per resource. What the caller made and
// the index holds, the path, the key's strings, the definition and its
// hash, is made before the first measure and alive at the second, so the
// figure is the index's own; each file's []Doc is made per call, as the
// watcher's decoder does, and is garbage after it.
func BenchmarkRetainedPerResource(b *testing.B) {
	const n = 100_000
	type definition struct{ spec string }
	paths := make([]string, n)
	keys := make([]events.Key, n)
	objects := make([]any, n)
	hashes := make([]string, n)
	for i := range n {
		name := fmt.Sprintf("w%06d", i)
		paths[i] = "workflows/" + name + ".yaml"
		keys[i] = events.NewKey("Workflow", "", name)
		objects[i] = &definition{spec: name}
		sum := sha256.Sum256([]byte(name))
		hashes[i] = "sha256:" + hex.EncodeToString(sum[:])
	}
	var perResource float64
	for b.Loop() {
		before := memtest.LiveHeap()
		ix := resources.New()
		for i := range n {
			ix.SetFile(paths[i], []resources.Doc{{Key: keys[i], Object: objects[i], Hash: hashes[i]}}, nil, keys[i])
		}
		ix.Keys("") // the workflow engine lists the keys after the burst
		perResource = float64(memtest.LiveHeap()-before) / n
		runtime.KeepAlive(ix)
	}
	runtime.KeepAlive(paths)
	runtime.KeepAlive(keys)
	runtime.KeepAlive(objects)
	runtime.KeepAlive(hashes)
	b.ReportMetric(perResource, "B/resource")
}

// BenchmarkHashLookup is what finding a key costs, Hash being what the
// coordinator reads on every reconcile: among 100,000 resources, of keys
// made apart from the index's, as a caller's are.
func BenchmarkHashLookup(b *testing.B) {
	const n = 100_000
	ix := resources.New()
	keys := make([]events.Key, n)
	for i := range n {
		name := fmt.Sprintf("w%06d", i)
		k := events.NewKey("Workflow", "", name)
		ix.SetFile("workflows/"+name+".yaml", []resources.Doc{{Key: k, Object: name, Hash: "h"}}, nil, k)
		keys[i] = events.NewKey("Workflow", "", fmt.Sprintf("w%06d", i))
	}
	i := 0
	for b.Loop() {
		if ix.Hash(keys[i%n]) == "" {
			b.Fatal("not found")
		}
		i += 7919
	}
}
