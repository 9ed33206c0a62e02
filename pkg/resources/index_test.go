package resources_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/musterd/musterd/pkg/events"
	"github.com/musterd/musterd/pkg/resources"
)

var (
	git  = events.NewKey("MCPServer", "", "git")
	fs   = events.NewKey("MCPServer", "", "fs")
	stem = events.NewKey("MCPServer", "", "broken")
)

func doc(k events.Key, spec string) resources.Doc {
	return resources.Doc{Key: k, Object: spec, Hash: "h:" + spec}
}

func ops(changes []resources.Change) map[string]events.Operation {
	out := map[string]events.Operation{}
	for _, c := range changes {
		out[c.Key.Name] = c.Op
	}
	return out
}

func TestCreateUpdateDeleteAndNoChangeForTheSameContent(t *testing.T) {
	ix := resources.New()
	assert.Equal(t, map[string]events.Operation{"git": "create"}, ops(ix.SetFile("mcpservers/git.yaml", []resources.Doc{doc(git, "v1")}, nil, git)))
	assert.Empty(t, ix.SetFile("mcpservers/git.yaml", []resources.Doc{doc(git, "v1")}, nil, git), "rewriting the same content changes nothing")
	assert.Equal(t, map[string]events.Operation{"git": "update"}, ops(ix.SetFile("mcpservers/git.yaml", []resources.Doc{doc(git, "v2")}, nil, git)))
	e, ok := ix.Get(git)
	require.True(t, ok)
	assert.Equal(t, "v2", e.Object)
	assert.Equal(t, []string{"mcpservers/git.yaml"}, e.Files)
	assert.NoError(t, e.Err)
	assert.Equal(t, e.Hash, ix.Hash(git))
	assert.NotEmpty(t, ix.Hash(git))

	changes := ix.RemoveFile("mcpservers/git.yaml")
	assert.Equal(t, []resources.Change{{Key: git, Op: events.OperationDelete, File: "mcpservers/git.yaml"}}, changes)
	_, ok = ix.Get(git)
	assert.False(t, ok)
	assert.Empty(t, ix.Hash(git), "no hash for a resource not declared")
	assert.Nil(t, ix.RemoveFile("mcpservers/git.yaml"))
}

func TestABrokenFileKeepsTheLastGoodDefinitionAndIsNeverADelete(t *testing.T) {
	ix := resources.New()
	ix.SetFile("mcpservers/a.yaml", []resources.Doc{doc(git, "good")}, nil, stem)

	// Invalid document: the key is known, the old definition stays.
	invalid := errors.New("mcpservers/a.yaml:7: spec.timeout: must be at most 300")
	changes := ix.SetFile("mcpservers/a.yaml", []resources.Doc{{Key: git, Err: invalid}}, nil, stem)
	assert.Equal(t, map[string]events.Operation{"git": "update"}, ops(changes))
	e, _ := ix.Get(git)
	assert.Equal(t, "good", e.Object)
	assert.Equal(t, invalid, e.Err)

	// Then unparsable: still no delete, even though the name (git) is not
	// the file's stem (a).
	syntax := errors.New("mcpservers/a.yaml:3: yaml: did not find expected key")
	changes = ix.SetFile("mcpservers/a.yaml", nil, syntax, events.NewKey("MCPServer", "", "a"))
	assert.Equal(t, map[string]events.Operation{"git": "update"}, ops(changes))
	e, ok := ix.Get(git)
	require.True(t, ok)
	assert.Equal(t, "good", e.Object)
	assert.Equal(t, syntax, e.Err)
	_, ok = ix.Get(events.NewKey("MCPServer", "", "a"))
	assert.False(t, ok, "the fallback key is only for files that never declared anything")

	// Fixed: the new definition is in force, the error gone.
	ix.SetFile("mcpservers/a.yaml", []resources.Doc{doc(git, "fixed")}, nil, stem)
	e, _ = ix.Get(git)
	assert.Equal(t, "fixed", e.Object)
	assert.NoError(t, e.Err)
}

func TestAFileThatNeverParsedShowsItsErrorOnTheKeyItsNameImplies(t *testing.T) {
	ix := resources.New()
	syntax := errors.New("mcpservers/broken.yaml:1: yaml: mapping values are not allowed here")
	assert.Equal(t, map[string]events.Operation{"broken": "create"}, ops(ix.SetFile("mcpservers/broken.yaml", nil, syntax, stem)))
	e, ok := ix.Get(stem)
	require.True(t, ok)
	assert.Nil(t, e.Object)
	assert.Equal(t, syntax, e.Err)

	other := errors.New("mcpservers/broken.yaml:2: yaml: another problem")
	assert.Equal(t, map[string]events.Operation{"broken": "update"}, ops(ix.SetFile("mcpservers/broken.yaml", nil, other, stem)))
	e, _ = ix.Get(stem)
	assert.Equal(t, other, e.Err)

	assert.Equal(t, map[string]events.Operation{"broken": "delete"}, ops(ix.RemoveFile("mcpservers/broken.yaml")))
}

func TestTwoFilesClaimingOneIdentityAreAnErrorOnBothNeverASilentWinner(t *testing.T) {
	ix := resources.New()
	ix.SetFile("mcpservers/git.yaml", []resources.Doc{doc(git, "first")}, nil, git)
	changes := ix.SetFile("mcpservers/git-copy.yaml", []resources.Doc{doc(git, "second")}, nil, events.NewKey("MCPServer", "", "git-copy"))
	assert.Equal(t, map[string]events.Operation{"git": "update"}, ops(changes))
	e, _ := ix.Get(git)
	assert.Equal(t, "first", e.Object, "the definition in force before the conflict stays")
	assert.Equal(t, []string{"mcpservers/git-copy.yaml", "mcpservers/git.yaml"}, e.Files)
	require.Error(t, e.Err)
	assert.Contains(t, e.Err.Error(), "mcpservers/git-copy.yaml, mcpservers/git.yaml")

	// Removing one resolves the conflict in favour of the other.
	ix.RemoveFile("mcpservers/git.yaml")
	e, _ = ix.Get(git)
	assert.Equal(t, "second", e.Object)
	assert.NoError(t, e.Err)
	assert.Equal(t, []string{"mcpservers/git-copy.yaml"}, e.Files)
}

func TestMultiDocumentFilesAndDocumentsThatMove(t *testing.T) {
	ix := resources.New()
	ix.SetFile("mcpservers/all.yaml", []resources.Doc{doc(git, "g"), doc(fs, "f")}, nil, stem)
	assert.Len(t, ix.List("MCPServer"), 2)
	assert.Empty(t, ix.List("Workflow"))

	// fs moves to its own file: no delete, no create, only its file changes.
	ix.SetFile("mcpservers/fs.yaml", []resources.Doc{doc(fs, "f")}, nil, fs)
	changes := ix.SetFile("mcpservers/all.yaml", []resources.Doc{doc(git, "g")}, nil, stem)
	assert.Equal(t, map[string]events.Operation{"fs": "update"}, ops(changes))
	e, _ := ix.Get(fs)
	assert.Equal(t, []string{"mcpservers/fs.yaml"}, e.Files)
	assert.NoError(t, e.Err)
	assert.Equal(t, []string{"mcpservers/all.yaml", "mcpservers/fs.yaml"}, ix.Files())
}

func TestKeysAreCanonical(t *testing.T) {
	ix := resources.New()
	ix.SetFile("w.yaml", []resources.Doc{doc(events.Key{Kind: "Workflow", Name: "w"}, "x")}, nil, stem)
	_, ok := ix.Get(events.NewKey("Workflow", "default", "w"))
	assert.True(t, ok)
	_, ok = ix.Get(events.Key{Kind: "Workflow", Name: "w"})
	assert.True(t, ok)
}

func TestAFileOfManyDocumentsAndAKeyDeclaredTwiceInOneFile(t *testing.T) {
	for _, n := range []int{3, 50} { // searched linearly, and through an index
		ix := resources.New()
		docs := make([]resources.Doc, 0, n+1)
		for i := range n {
			docs = append(docs, doc(events.NewKey("Workflow", "", fmt.Sprint("w", i)), fmt.Sprint("v", i)))
		}
		docs = append(docs, doc(events.NewKey("Workflow", "", "w1"), "later"))
		require.Len(t, ix.SetFile("workflows/all.yaml", docs, nil, stem), n)
		e, _ := ix.Get(events.NewKey("Workflow", "", "w1"))
		assert.Equal(t, "later", e.Object, "n=%d: the later document of a key is what the file says", n)
		e, _ = ix.Get(events.NewKey("Workflow", "", fmt.Sprint("w", n-1)))
		assert.Equal(t, fmt.Sprint("v", n-1), e.Object)

		// A broken rewrite keeps every last good definition; dropping one
		// document deletes it alone.
		assert.Equal(t, n, len(ix.SetFile("workflows/all.yaml", nil, errors.New("bad"), stem)), "n=%d: an error on each", n)
		e, _ = ix.Get(events.NewKey("Workflow", "", "w0"))
		assert.Equal(t, "v0", e.Object)
		changes := ix.SetFile("workflows/all.yaml", docs[1:n], nil, stem)
		assert.Equal(t, events.OperationDelete, ops(changes)["w0"], "n=%d", n)
		assert.Len(t, ix.List("Workflow"), n-1)
	}
}

// HasFile and CountFilesIn answer for the files the index knows, whatever
// they declare: a broken file counts, a removed one does not, and only the
// files directly in a directory are its own.
func TestHasFileAndCountFilesIn(t *testing.T) {
	ix := resources.New()
	ix.SetFile("mcpservers/git.yaml", []resources.Doc{doc(git, "v1")}, nil, git)
	ix.SetFile("mcpservers/broken.yaml", nil, errors.New("cannot parse"), stem)
	ix.SetFile("mcpservers/nested/fs.yaml", []resources.Doc{doc(fs, "v1")}, nil, fs)
	ix.SetFile("mcpserversx/fs.yaml", []resources.Doc{doc(fs, "v1")}, nil, fs)

	assert.True(t, ix.HasFile("mcpservers/broken.yaml"))
	assert.False(t, ix.HasFile("mcpservers/none.yaml"))
	assert.Equal(t, 2, ix.CountFilesIn("mcpservers"), "not nested/, not mcpserversx/")
	assert.Equal(t, 1, ix.CountFilesIn("mcpservers/nested"))
	assert.Equal(t, 0, ix.CountFilesIn("workflows"))

	ix.RemoveFile("mcpservers/git.yaml")
	assert.False(t, ix.HasFile("mcpservers/git.yaml"))
	assert.Equal(t, 1, ix.CountFilesIn("mcpservers"))
}
