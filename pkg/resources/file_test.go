package resources

import (
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/musterd/musterd/pkg/events"
)

// A file of one good document whose key is new shares one allocation with
// its entry; a file whose key already has an entry, or of several
// documents, or unreadable, does not. A state the index replaces or
// forgets is cleared, so that what shares its allocation keeps nothing of
// it alive.
func TestAFileOfOneNewDocumentIsAllocatedWithItsEntry(t *testing.T) {
	ix := New()
	a, b, c := events.NewKey("Workflow", "", "a"), events.NewKey("Workflow", "", "b"), events.NewKey("Workflow", "", "c")
	doc := func(k events.Key, hash string) Doc { return Doc{Key: k, Object: hash, Hash: hash} }
	// paired reports whether e sits where fileOfOne puts a file's
	// entry, just after f: an address compared, never dereferenced.
	paired := func(f *fileState, e *entry) bool {
		return uintptr(unsafe.Pointer(e)) == uintptr(unsafe.Pointer(f))+unsafe.Offsetof(fileWithEntry{}.entry)
	}

	ix.SetFile("workflows/a.yaml", []Doc{doc(a, "a1")}, nil, a)
	first := ix.files["workflows/a.yaml"]
	require.NotNil(t, first.first.e)
	assert.True(t, paired(first, first.first.e), "one new document: file and entry together")
	entryA := first.first.e
	assert.Same(t, entryA, ix.entries.get(a))

	ix.SetFile("workflows/a.yaml", []Doc{doc(a, "a2")}, nil, a) // an edit: the key has its entry
	edited := ix.files["workflows/a.yaml"]
	assert.Same(t, entryA, edited.first.e, "the entry stays")
	assert.Equal(t, fileState{}, *first, "the replaced state is cleared")
	got, ok := ix.Get(a)
	require.True(t, ok)
	assert.Equal(t, "a2", got.Hash)
	assert.Equal(t, []string{"workflows/a.yaml"}, got.Files)

	ix.SetFile("workflows/bc.yaml", []Doc{doc(b, "b"), doc(c, "c")}, nil, b)
	for _, k := range []events.Key{b, c} {
		e := ix.entries.get(k)
		require.NotNil(t, e)
		assert.False(t, paired(ix.files["workflows/bc.yaml"], e), "two documents: apart")
	}

	ix.SetFile("workflows/dup.yaml", []Doc{doc(a, "dup")}, nil, a) // a declared twice
	assert.False(t, paired(ix.files["workflows/dup.yaml"], ix.entries.get(a)), "a key with an entry: apart")

	ix.RemoveFile("workflows/dup.yaml")
	got, ok = ix.Get(a)
	require.True(t, ok)
	assert.Equal(t, "a2", got.Hash, "the conflict is over; the other file's definition is in force")
	ix.RemoveFile("workflows/a.yaml")
	assert.Equal(t, fileState{}, *edited, "a forgotten state is cleared")
	_, ok = ix.Get(a)
	assert.False(t, ok)
}
