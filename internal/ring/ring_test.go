package ring_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/musterd/musterd/internal/ring"
)

// drain pops every value.
func drain(r *ring.Buffer[int]) []int {
	var out []int
	for r.Len() > 0 {
		out = append(out, r.Pop())
	}
	return out
}

func TestOrderIsKeptAcrossWrapAndGrowth(t *testing.T) {
	var r ring.Buffer[int]
	var want []int
	// Fill part of the first allocation, move the front, and fill past
	// it: the values wrap around the end, then the buffer grows.
	for i := range 50 {
		r.Push(i)
	}
	for i := range 40 {
		require.Equal(t, i, r.Pop())
	}
	for i := 50; i < 200; i++ {
		r.Push(i)
	}
	for i := 40; i < 200; i++ {
		want = append(want, i)
	}
	assert.Equal(t, 160, r.Len())
	assert.Equal(t, 40, *r.At(0))
	assert.Equal(t, 199, *r.At(159))
	*r.At(1) = -41 // in place
	want[1] = -41
	assert.Equal(t, want, drain(&r))
	assert.Zero(t, r.Len())
}

func TestRetainKeepsTheChosenInOrderAndShrinks(t *testing.T) {
	var r ring.Buffer[int]
	for i := range 1000 {
		r.Push(i)
	}
	for range 10 { // the front moves: Retain reads across the wrap
		r.Pop()
	}
	r.Retain(func(v int) bool { return v%100 == 0 })
	assert.Equal(t, []int{100, 200, 300, 400, 500, 600, 700, 800, 900}, drain(&r))
}
