package v1alpha1

import (
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

var (
	jsonValueType  = reflect.TypeFor[JSON]()
	objectMetaType = reflect.TypeFor[metav1.ObjectMeta]()
	mcpServerType  = reflect.TypeFor[MCPServer]()
	workflowType   = reflect.TypeFor[Workflow]()
)

// fileMetadataFields are the metadata fields a definition file may set. The
// others (uid, resourceVersion, ownerReferences, ...) belong to an API
// server.
var fileMetadataFields = []string{"name", "namespace", "labels", "annotations"}

// fieldChecker checks a document's tree against a Go type. It knows field
// names only from json tags, so the types stay the one source of the
// schema; encoding/json alone would not do, as it matches names regardless
// of case.
type fieldChecker struct {
	lines map[string]int // path of every field present → its line
	errs  FieldErrors
}

func (c *fieldChecker) fail(line int, p *fieldPath, format string, args ...any) {
	c.errs = append(c.errs, &FieldError{Line: line, Field: p.String(), Msg: fmt.Sprintf(format, args...)})
}

// check walks v against type t. It records the line of every field present,
// reports every field t lacks and every value of the wrong type, and returns
// v as encoding/json values without null struct fields, which mean "not
// set" as they do to an API server.
func (c *fieldChecker) check(v *yvalue, t reflect.Type, p *fieldPath) any {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == jsonValueType {
		return v.plain()
	}
	var want string
	switch t.Kind() {
	case reflect.Struct:
		if v.kind == yMap {
			return c.checkStruct(v, t, p)
		}
		want = "object"
	case reflect.Map:
		if v.kind == yMap {
			out := make(map[string]any, len(v.entries))
			for i := range v.entries {
				e := &v.entries[i]
				ep := p.Key(e.key)
				c.lines[ep.String()] = e.line
				out[e.key] = c.check(&e.value, t.Elem(), ep)
			}
			return out
		}
		want = "object"
	case reflect.Slice:
		if v.kind == ySeq {
			out := make([]any, len(v.items))
			for i := range v.items {
				item := &v.items[i]
				ip := p.Index(i)
				c.lines[ip.String()] = item.line
				out[i] = c.check(item, t.Elem(), ip)
			}
			return out
		}
		want = "array"
	case reflect.String:
		if v.kind == yString {
			return v.str
		}
		want = "string"
	case reflect.Bool:
		if v.kind == yBool {
			return v.boolean()
		}
		want = "boolean"
	case reflect.Int, reflect.Int32, reflect.Int64:
		if v.kind == yInt && !reflect.Zero(t).OverflowInt(v.integer()) {
			return v.integer()
		}
		if v.kind == yInt || v.kind == yUint {
			c.fail(v.line, p, "integer %v is out of range", v.scalar())
			return nil
		}
		want = "integer"
	default:
		c.fail(v.line, p, "cannot be read from a file (Go type %s)", t)
		return nil
	}
	c.fail(v.line, p, "expected %s, got %s", want, v.typeName())
	return nil
}

func (c *fieldChecker) checkStruct(v *yvalue, t reflect.Type, p *fieldPath) any {
	fields := jsonFields(t)
	out := make(map[string]any, len(v.entries))
	spelled := map[string]string{} // field → the key that set it (aliases.go)
	for i := range v.entries {
		e := &v.entries[i]
		key := e.key
		if _, known := fields[key]; !known {
			if camel, ok := camelField(t, key, fields); ok {
				key = camel
			}
		}
		fp := p.Child(key)
		ft, known := fields[key]
		switch {
		case !known:
			c.fail(e.line, fp, "unknown field%s", suggestion(e.key, fields))
		case spelled[key] != "" && spelled[key] != e.key:
			c.fail(e.line, fp, "set twice, as %s and as %s: give one", spelled[key], e.key)
		case notInFiles(t, key) != "":
			c.fail(e.line, fp, "%s", notInFiles(t, key))
		case e.value.kind == yNull:
		default:
			spelled[key] = e.key
			c.lines[fp.String()] = e.line
			out[key] = c.check(&e.value, ft, fp)
		}
	}
	return out
}

// notInFiles says why field name of struct type t may not be set in a
// definition file, or "" if it may.
func notInFiles(t reflect.Type, name string) string {
	switch t {
	case objectMetaType:
		if !slices.Contains(fileMetadataFields, name) {
			return "not allowed in definition files, whose metadata holds only name, namespace, labels and annotations"
		}
	case mcpServerType, workflowType:
		if name == "status" {
			return "not allowed in definition files: musterd keeps status apart from definitions"
		}
	}
	return ""
}

var jsonFieldsCache sync.Map // reflect.Type → map[string]reflect.Type

// jsonFields maps the JSON names of struct type t's fields, including those
// of embedded structs without a name of their own, to their types.
func jsonFields(t reflect.Type) map[string]reflect.Type {
	if f, ok := jsonFieldsCache.Load(t); ok {
		return f.(map[string]reflect.Type)
	}
	fields := map[string]reflect.Type{}
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		switch {
		case name == "-" || !f.IsExported():
		case name == "" && f.Anonymous:
			maps.Copy(fields, jsonFields(f.Type))
		case name == "":
			fields[f.Name] = f.Type
		default:
			fields[name] = f.Type
		}
	}
	jsonFieldsCache.Store(t, fields)
	return fields
}

// suggestion returns ` (did you mean "x"?)` for the known field closest to
// the unknown name, or "" when none is close: same letters in another case,
// or one edit away (two for longer names), a swap of neighbours counting as
// one.
func suggestion(name string, fields map[string]reflect.Type) string {
	best, bestDist := "", 3
	if len(name) <= 4 {
		bestDist = 2
	}
	for _, f := range slices.Sorted(maps.Keys(fields)) {
		if strings.EqualFold(f, name) {
			return fmt.Sprintf(" (did you mean %q?)", f)
		}
		if d := editDistance(name, f); d < bestDist {
			best, bestDist = f, d
		}
	}
	if best == "" {
		return ""
	}
	return fmt.Sprintf(" (did you mean %q?)", best)
}

// editDistance is the optimal string alignment distance between a and b:
// insertions, deletions, substitutions and swaps of neighbours.
func editDistance(a, b string) int {
	prev2 := make([]int, len(b)+1)
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(b)]
}
