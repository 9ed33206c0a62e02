package resources_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/musterd/musterd/pkg/events"
	"github.com/musterd/musterd/pkg/resources"
)

// Named finds a name in each namespace that has it, in Keys' order, and
// follows creates and deletes.
func TestNamedFindsTheFirstNamespaceThatHasTheName(t *testing.T) {
	ix := resources.New()
	inB := events.NewKey("Workflow", "team-b", "deploy")
	inA := events.NewKey("Workflow", "team-a", "deploy")
	ix.SetFile("b.yaml", []resources.Doc{doc(inB, "b")}, nil, events.Key{})
	ix.SetFile("s.yaml", []resources.Doc{doc(events.NewKey("MCPServer", "team-0", "deploy"), "s")}, nil, events.Key{})
	assert.Equal(t, []events.Key{inB}, ix.Named("Workflow", "deploy"))

	ix.SetFile("a.yaml", []resources.Doc{doc(inA, "a")}, nil, events.Key{})
	var inOrder []events.Key
	for _, k := range ix.Keys("Workflow") {
		if k.Name == "deploy" {
			inOrder = append(inOrder, k)
		}
	}
	assert.Equal(t, []events.Key{inA, inB}, inOrder)
	assert.Equal(t, inOrder, ix.Named("Workflow", "deploy"), "as Keys orders them")

	ix.RemoveFile("a.yaml")
	assert.Equal(t, []events.Key{inB}, ix.Named("Workflow", "deploy"))
	ix.RemoveFile("b.yaml")
	assert.Empty(t, ix.Named("Workflow", "deploy"), "the MCPServer of that name is another kind")
}

// The same content read again keeps the definition in force as it was, the
// same object; new content replaces it.
func TestTheSameContentKeepsTheSameObject(t *testing.T) {
	ix := resources.New()
	k := events.NewKey("Workflow", "", "w")
	type def struct{ spec string }
	first := &def{"one"}
	ix.SetFile("w.yaml", []resources.Doc{{Key: k, Object: first, Hash: "h1"}}, nil, k)
	changes := ix.SetFile("w.yaml", []resources.Doc{{Key: k, Object: &def{"one"}, Hash: "h1"}}, nil, k)
	assert.Empty(t, changes)
	obj, _ := ix.Object(k)
	assert.Same(t, first, obj)

	second := &def{"two"}
	ix.SetFile("w.yaml", []resources.Doc{{Key: k, Object: second, Hash: "h2"}}, nil, k)
	obj, _ = ix.Object(k)
	assert.Same(t, second, obj)
}
