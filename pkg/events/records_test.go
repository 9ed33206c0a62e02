package events

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestRecordsGrowWithoutMovingARecord(t *testing.T) {
	var r Records[int]
	first := r.At(0)
	*first = 7
	*r.At(10 * recordsPage) = 9 // grows by many pages at once
	assert.Same(t, first, r.At(0), "growing moved a record")
	assert.Equal(t, 7, *r.At(0))
	assert.Equal(t, 9, *r.At(10 * recordsPage))
	assert.Zero(t, *r.At(recordsPage + 1), "a record never set is zero")
	r.Reset()
	assert.Zero(t, *r.At(0), "Reset drops every record")
}
