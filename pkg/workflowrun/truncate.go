package workflowrun

import (
	"encoding/json"
	"slices"

	"github.com/musterd/musterd/pkg/api/types"
)

// TruncationMarker replaces an input or result that bound drops from an
// execution record: muster's text.
const TruncationMarker = "[truncated: payload exceeded retention size limit]"

// bound keeps exec's record, as JSON, within limit bytes, as muster does: a
// record within it is left alone; in one over it, every payload (the
// execution's input and result, each step's input and result) larger than
// limit/8 is replaced by TruncationMarker (an input by {"_truncated":
// marker}) and Truncated is set. musterd records every step's input and
// result, where muster keeps few, so many payloads each under limit/8
// could still add up past limit: then the largest left are replaced too,
// until the record fits or none is left. What remains beyond limit is the
// record's own metadata (ids, times, statuses).
func bound(exec *types.Execution, limit int) {
	if exec == nil || limit <= 0 {
		return
	}
	total := jsonSize(exec)
	if total <= limit {
		return
	}
	type payload struct {
		size    int
		replace func() int // replaces the payload, returning the marker's size
	}
	marker := func(p *any) func() int {
		return func() int { *p = TruncationMarker; return jsonSize(TruncationMarker) }
	}
	markerMap := func(p *map[string]any) func() int {
		return func() int { *p = map[string]any{"_truncated": TruncationMarker}; return jsonSize(*p) }
	}
	var all []payload
	addMap := func(p *map[string]any) {
		if *p != nil {
			all = append(all, payload{size: jsonSize(*p), replace: markerMap(p)})
		}
	}
	add := func(p *any) {
		if *p != nil {
			all = append(all, payload{size: jsonSize(*p), replace: marker(p)})
		}
	}
	addMap(&exec.Input)
	add(&exec.Result)
	for i := range exec.Steps {
		addMap(&exec.Steps[i].Input)
		add(&exec.Steps[i].Result)
	}
	exec.Truncated = true
	// muster's pass: every payload over an eighth of the limit.
	var rest []payload
	for _, p := range all {
		if p.size > limit/8 {
			total += p.replace() - p.size
		} else {
			rest = append(rest, p)
		}
	}
	// musterd's: the largest left, until the record fits. A payload is
	// replaced only when that makes the record smaller.
	slices.SortStableFunc(rest, func(a, b payload) int { return b.size - a.size })
	for _, p := range rest {
		if total <= limit {
			break
		}
		if m := jsonSize(TruncationMarker) + len(`{"_truncated":}`); p.size <= m {
			break
		}
		total += p.replace() - p.size
	}
}

// jsonSize is the length of v as JSON; 0 when nil or not encodable.
func jsonSize(v any) int {
	if v == nil {
		return 0
	}
	data, err := json.Marshal(v)
	if err != nil {
		return 0
	}
	return len(data)
}
