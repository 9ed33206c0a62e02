package resources

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/musterd/musterd/pkg/events"
)

// Keys of one hash share a chain: each is found by its key, and taking
// one out, at the head, the middle or the tail, leaves the others.
func TestEntriesOfOneHash(t *testing.T) {
	s := newEntrySet()
	const h = 7
	a, b, c := &entry{key: events.NewKey("Workflow", "", "a")}, &entry{key: events.NewKey("Workflow", "", "b")}, &entry{key: events.NewKey("MCPServer", "", "a")}
	for _, e := range []*entry{a, b, c} {
		s.addAt(h, e)
	}
	names := func() []string {
		var out []string
		for e := range s.all() {
			out = append(out, e.key.String())
		}
		slices.Sort(out)
		return out
	}
	assert.Equal(t, 3, s.n)
	for _, e := range []*entry{a, b, c} {
		assert.Same(t, e, s.getAt(h, e.key))
	}
	assert.Nil(t, s.getAt(h, events.NewKey("Workflow", "", "z")))
	assert.Nil(t, s.getAt(h+1, a.key), "another hash, another chain")

	s.removeAt(h, b) // the middle: c is the head, a the tail
	assert.Nil(t, s.getAt(h, b.key))
	assert.Equal(t, []string{c.key.String(), a.key.String()}, names(), "sorted")
	s.removeAt(h, b) // not there: nothing
	assert.Equal(t, 2, s.n)
	s.removeAt(h, c) // the head
	assert.Same(t, a, s.getAt(h, a.key))
	assert.Nil(t, s.getAt(h, c.key))
	s.removeAt(h, a) // the last
	assert.Equal(t, 0, s.n)
	assert.Empty(t, s.byHash, "no chain left behind")
	assert.Empty(t, names())

	s.add(a) // through the key's own hash
	assert.Same(t, a, s.get(a.key))
	s.remove(a)
	assert.Nil(t, s.get(a.key))
	assert.Empty(t, s.byHash)
}
