package events

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// A key folded again and again does not grow the fold without bound: the
// lists are merged once they hold twice the keys of the last merge, plus
// 1,024.
func TestTriggerMergerStaysBoundedByItsKeys(t *testing.T) {
	keys := []TriggeredKey{{Key: NewKey("Workflow", "", "a")}, {Key: NewKey("Workflow", "", "b")}}
	m := NewTriggerMerger(ReconciliationTriggered{Keys: NewTriggeredKeys(keys...)})
	peak := 0
	for range 100_000 {
		m.Add(ReconciliationTriggered{Keys: NewTriggeredKeys(keys...)})
		peak = max(peak, m.held)
	}
	assert.LessOrEqual(t, peak, 2*2+1024+2, "keys held at the most")
	assert.Equal(t, 2, m.Result().(ReconciliationTriggered).Keys.Len())
}
