package tooldef

import (
	"encoding/json"
	"fmt"
	"math"
)

// Args are a call's arguments, as decoded from JSON.
type Args map[string]any

// Str returns the string argument name, or "" when it is absent or not a
// string.
func (a Args) Str(name string) string {
	s, _ := a[name].(string)
	return s
}

// Bool returns the boolean argument name, or def when it is absent.
func (a Args) Bool(name string, def bool) bool {
	if b, ok := a[name].(bool); ok {
		return b
	}
	return def
}

// Int returns the numeric argument name, truncated, or def when it is
// absent.
func (a Args) Int(name string, def int) int {
	switch n := a[name].(type) {
	case float64:
		return int(n)
	case int:
		return n
	case int64:
		return int(n)
	case json.Number:
		if i, err := n.Int64(); err == nil {
			return int(i)
		}
	}
	return def
}

// Object returns the object argument name, or nil.
func (a Args) Object(name string) map[string]any {
	m, _ := a[name].(map[string]any)
	return m
}

// JSONType names the JSON type of a decoded value; a whole number is an
// Integer.
func JSONType(v any) string {
	switch n := v.(type) {
	case string:
		return String
	case bool:
		return Boolean
	case float64:
		if n == math.Trunc(n) {
			return Integer
		}
		return Number
	case json.Number:
		if _, err := n.Int64(); err == nil {
			return Integer
		}
		return Number
	case int, int64:
		return Integer
	case map[string]any:
		return Object
	case []any:
		return Array
	case nil:
		return "null"
	}
	return fmt.Sprintf("%T", v)
}

// Article names a JSON type with its article: "a string", "an object".
func Article(t string) string {
	switch t {
	case Integer, Array, Object:
		return "an " + t
	}
	return "a " + t
}
