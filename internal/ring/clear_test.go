package ring

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// The slots Pop and Retain free hold nothing: a value that points
// somewhere is not kept alive by the buffer once out of it.
func TestFreedSlotsAreCleared(t *testing.T) {
	var r Buffer[*int]
	for range 3 {
		r.Push(new(int))
	}
	r.Pop()
	assert.Nil(t, r.buf[0], "popped")
	r.Retain(func(v *int) bool { return false })
	assert.Equal(t, make([]*int, MinCap), r.buf, "retained none")
	r.Push(new(int))
	r.Reset()
	assert.Nil(t, r.buf, "reset")
}
