package v1alpha1

import (
	"encoding/json"
	"slices"
	"strconv"
	"strings"
)

// jsonWriter writes yvalues as JSON, byte for byte as encoding/json
// marshals their plain values (object keys sorted, HTML characters
// escaped), without building the plain values: JSON fields hold these
// bytes and hashes are taken of them. The rare strings and numbers it has
// no fast path for it leaves to encoding/json itself.
type jsonWriter struct {
	buf []byte
	// deepest is the greatest nesting level of an object or array written,
	// counting from the level value was called with.
	deepest int
}

// value writes v, an object or array of which stands at nesting level
// level (the outermost at 1).
func (w *jsonWriter) value(v *yvalue, level int) {
	switch v.kind {
	case yNull:
		w.buf = append(w.buf, "null"...)
	case yBool:
		w.buf = strconv.AppendBool(w.buf, v.boolean())
	case yInt:
		w.buf = strconv.AppendInt(w.buf, v.integer(), 10)
	case yUint:
		w.buf = strconv.AppendUint(w.buf, v.bits, 10)
	case yFloat:
		w.marshal(v.float())
	case yString:
		w.string(v.str)
	case ySeq:
		w.deepest = max(w.deepest, level)
		w.buf = append(w.buf, '[')
		for i := range v.items {
			if i > 0 {
				w.buf = append(w.buf, ',')
			}
			w.value(&v.items[i], level+1)
		}
		w.buf = append(w.buf, ']')
	case yMap:
		w.deepest = max(w.deepest, level)
		w.buf = append(w.buf, '{')
		for n, i := range sortedEntries(v.entries) {
			if n > 0 {
				w.buf = append(w.buf, ',')
			}
			e := &v.entries[i]
			w.string(e.key)
			w.buf = append(w.buf, ':')
			w.value(&e.value, level+1)
		}
		w.buf = append(w.buf, '}')
	}
}

// string writes s quoted. Strings of printable ASCII but for the
// characters encoding/json escapes are written as they are; others are left
// to encoding/json.
func (w *jsonWriter) string(s string) {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			w.marshal(s)
			return
		}
	}
	w.buf = append(w.buf, '"')
	w.buf = append(w.buf, s...)
	w.buf = append(w.buf, '"')
}

func (w *jsonWriter) marshal(x any) {
	data, err := json.Marshal(x)
	if err != nil {
		// Strings and finite numbers always marshal.
		panic("v1alpha1: marshalling a scalar: " + err.Error())
	}
	w.buf = append(w.buf, data...)
}

// sortedEntries returns the indexes of entries in the order of their keys,
// as encoding/json writes a map's.
func sortedEntries(entries []yentry) []int {
	order := make([]int, len(entries))
	for i := range order {
		order[i] = i
	}
	if !slices.IsSortedFunc(order, func(a, b int) int { return strings.Compare(entries[a].key, entries[b].key) }) {
		slices.SortFunc(order, func(a, b int) int { return strings.Compare(entries[a].key, entries[b].key) })
	}
	return order
}
