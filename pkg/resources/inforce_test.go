package resources_test

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/musterd/musterd/pkg/events"
	"github.com/musterd/musterd/pkg/resources"
)

// A file's document that is the definition in force stays what the file
// says through a conflict, a broken file and an invalid document, and the
// definition in force stays the same object when the same content returns.
func TestTheDefinitionInForceThroughAConflictABrokenFileAndAnInvalidDocument(t *testing.T) {
	ix := resources.New()
	k := events.NewKey("Workflow", "", "w")
	type def struct{ spec string }
	first := &def{"one"}
	ix.SetFile("a.yaml", []resources.Doc{{Key: k, Object: first, Hash: "h1"}}, nil, k)
	ix.SetFile("b.yaml", []resources.Doc{{Key: k, Object: &def{"two"}, Hash: "h2"}}, nil, k)
	syntax := errors.New("a.yaml:1: yaml: did not find expected key")
	ix.SetFile("a.yaml", nil, syntax, k)
	e, _ := ix.Get(k)
	assert.Same(t, first, e.Object, "in force before the conflict")
	require.Error(t, e.Err)
	assert.Contains(t, e.Err.Error(), "a.yaml, b.yaml", "the conflict is the error while it lasts")

	changes := ix.RemoveFile("b.yaml")
	assert.Equal(t, []resources.Change{{Key: k, Op: events.OperationUpdate, Hash: "h1", File: "a.yaml"}}, changes)
	e, _ = ix.Get(k)
	assert.Same(t, first, e.Object, "a broken file keeps the last good")
	assert.Equal(t, syntax, e.Err)
	assert.Equal(t, []string{"a.yaml"}, e.Files)

	ix.SetFile("a.yaml", []resources.Doc{{Key: k, Object: &def{"one"}, Hash: "h1"}}, nil, k)
	e, _ = ix.Get(k)
	assert.Same(t, first, e.Object, "the same content keeps the same object")
	assert.NoError(t, e.Err)

	invalid := errors.New("a.yaml:3: spec.steps: required")
	ix.SetFile("a.yaml", []resources.Doc{{Key: k, Err: invalid}}, nil, k)
	ix.SetFile("b.yaml", []resources.Doc{{Key: k, Object: &def{"two"}, Hash: "h2"}}, nil, k)
	ix.RemoveFile("b.yaml")
	e, _ = ix.Get(k)
	assert.Same(t, first, e.Object, "an invalid document keeps the last good")
	assert.Equal(t, invalid, e.Err)

	third := &def{"three"}
	assert.Equal(t, []resources.Change{{Key: k, Op: events.OperationUpdate, Hash: "h3", File: "a.yaml"}},
		ix.SetFile("a.yaml", []resources.Doc{{Key: k, Object: third, Hash: "h3"}}, nil, k))
	obj, _ := ix.Object(k)
	assert.Same(t, third, obj)
	assert.Equal(t, "h3", ix.Hash(k))
}

// A file of no documents is known, declares nothing, and a broken rewrite
// of it shows no error, as it has no key to show it on.
func TestAFileOfNoDocuments(t *testing.T) {
	ix := resources.New()
	assert.Empty(t, ix.SetFile("w.yaml", nil, nil, stem))
	keys := ix.FileKeys("w.yaml")
	assert.NotNil(t, keys)
	assert.Empty(t, keys)
	assert.Nil(t, ix.FileKeys("other.yaml"))
	assert.Empty(t, ix.SetFile("w.yaml", nil, errors.New("bad"), stem))
	assert.Equal(t, []string{"w.yaml"}, ix.Files())
	assert.Empty(t, ix.List(""))
}
