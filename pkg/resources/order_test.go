package resources_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/musterd/musterd/pkg/events"
	"github.com/musterd/musterd/pkg/resources"
)

// Keys keeps its order through creates in order and out of it, deletes and
// files of several kinds, and is what sorting List gives.
func TestKeysStaysSortedThroughCreatesAndDeletes(t *testing.T) {
	ix := resources.New()
	want := func() {
		t.Helper()
		for _, kind := range []string{"", "MCPServer", "Workflow", "None"} {
			var sorted []events.Key
			for _, e := range ix.List(kind) {
				sorted = append(sorted, e.Key)
			}
			got := ix.Keys(kind)
			require.NotNil(t, got)
			if len(sorted) == 0 {
				assert.Empty(t, got, kind)
				continue
			}
			assert.Equal(t, sorted, got, kind)
		}
	}
	want()
	set := func(path string, keys ...events.Key) {
		var docs []resources.Doc
		for _, k := range keys {
			docs = append(docs, resources.Doc{Key: k, Object: "x", Hash: "h"})
		}
		ix.SetFile(path, docs, nil, keys[0])
	}
	for i := range 20 { // in order: appended
		set(fmt.Sprintf("workflows/w%02d.yaml", i), events.NewKey("Workflow", "", fmt.Sprintf("w%02d", i)))
	}
	want()
	set("mcpservers/m.yaml", events.NewKey("MCPServer", "", "m"), events.NewKey("MCPServer", "a-b", "m")) // before them
	want()
	set("workflows/z.yaml", events.NewKey("Workflow", "zz", "last"))
	want()
	ix.RemoveFile("workflows/w05.yaml")
	want()
	set("workflows/w05.yaml", events.NewKey("Workflow", "", "w05"))
	want()
	for i := range 20 {
		ix.RemoveFile(fmt.Sprintf("workflows/w%02d.yaml", i))
	}
	want()
	got, ok := ix.Object(events.NewKey("Workflow", "zz", "last"))
	assert.True(t, ok)
	assert.Equal(t, "x", got)
	_, ok = ix.Object(events.NewKey("Workflow", "", "w05"))
	assert.False(t, ok)
}
