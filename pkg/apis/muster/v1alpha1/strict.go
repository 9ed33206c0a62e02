package v1alpha1

import (
	"bytes"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strconv"
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

// maxJSONDepth is how deeply encoding/json lets objects and arrays nest.
const maxJSONDepth = 10000

// objectDecoder decodes a document's tree into a typed object, checking it
// against the Go type as it goes. It knows field names only from json tags,
// so the types stay the one source of the schema; encoding/json alone would
// not do, as it matches names regardless of case. It sets what
// encoding/json would set from the checked tree's JSON, without producing
// and decoding that JSON, which would be a large share of the cost of
// decoding: null struct fields mean "not set", as they do to an API server,
// and JSON fields hold the JSON encoding of their value.
type objectDecoder struct {
	errs FieldErrors
	// unknown are the fields the type does not have, which decodeObject
	// settles as warnings or errors (unknown.go) once it has validated.
	unknown []unknownField
	path    []byte // of the value being decoded, spelled as fieldPath spells it
	// zero are the paths of fields, list items and map entries the file
	// sets to their type's zero value: validation asks whether they are
	// set (validator.has).
	zero []string
	// lines, when not nil, gets the line of every field, list item and map
	// entry present: validation needs them only to report errors, so they
	// are found only then (documentFields.lines).
	lines   map[string]int
	json    jsonWriter
	tooDeep bool // a value nests deeper than maxJSONDepth
}

// objectDecoders keeps decoders, with their buffers, between documents.
var objectDecoders = sync.Pool{New: func() any { return new(objectDecoder) }}

// release returns d to objectDecoders, keeping only its buffers (unless
// a large value grew one): what it decoded (the errors, the paths set to
// zero values) belongs to its caller.
func (d *objectDecoder) release() {
	const keep = 64 << 10
	path, buf := d.path[:0], d.json.buf[:0]
	if cap(buf) > keep {
		buf = nil
	}
	if cap(path) > keep {
		path = nil
	}
	*d = objectDecoder{path: path, json: jsonWriter{buf: buf}}
	objectDecoders.Put(d)
}

func (d *objectDecoder) fail(line int, format string, args ...any) {
	d.errs = append(d.errs, &FieldError{Line: line, Field: string(d.path), Msg: fmt.Sprintf(format, args...)})
}

// child, index and key extend the path as fieldPath's methods of the same
// names do, returning what to truncate it to afterwards.
func (d *objectDecoder) child(name string) int {
	n := len(d.path)
	if n > 0 {
		d.path = append(d.path, '.')
	}
	d.path = append(d.path, name...)
	return n
}

func (d *objectDecoder) index(i int) int {
	n := len(d.path)
	d.path = append(d.path, '[')
	d.path = strconv.AppendInt(d.path, int64(i), 10)
	d.path = append(d.path, ']')
	return n
}

func (d *objectDecoder) key(k string) int {
	n := len(d.path)
	d.path = append(d.path, '[')
	d.path = append(d.path, k...)
	d.path = append(d.path, ']')
	return n
}

// present records that the file sets the value at the path, on line, to
// rv.
func (d *objectDecoder) present(line int, rv reflect.Value) {
	if d.lines != nil {
		d.lines[string(d.path)] = line
	}
	if rv.IsZero() {
		d.zero = append(d.zero, string(d.path))
	}
}

// settle returns the value rv points to, through any pointers, allocating
// those that are nil.
func settle(rv reflect.Value) reflect.Value {
	for rv.Kind() == reflect.Pointer {
		if rv.IsNil() {
			rv.Set(reflect.New(rv.Type().Elem()))
		}
		rv = rv.Elem()
	}
	return rv
}

// decode checks v against rv's type and sets rv from it. level is the
// nesting level v has in the document's JSON (the document's own object is
// at 1).
func (d *objectDecoder) decode(v *yvalue, rv reflect.Value, level int) {
	t := rv.Type()
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == jsonValueType {
		if v.kind != yNull { // null leaves a *JSON nil and a JSON empty
			d.json.buf, d.json.deepest = d.json.buf[:0], 0
			d.json.value(v, level)
			d.tooDeep = d.tooDeep || d.json.deepest > maxJSONDepth
			settle(rv).Addr().Interface().(*JSON).Raw = bytes.Clone(d.json.buf)
		}
		return
	}
	var want string
	switch t.Kind() {
	case reflect.Struct:
		if v.kind == yMap {
			d.decodeStruct(v, settle(rv), level)
			return
		}
		want = "object"
	case reflect.Map:
		if v.kind == yMap {
			d.decodeMap(v, settle(rv), level)
			return
		}
		want = "object"
	case reflect.Slice:
		if v.kind == ySeq {
			d.decodeSlice(v, settle(rv), level)
			return
		}
		want = "array"
	case reflect.String:
		if v.kind == yString {
			settle(rv).SetString(v.str)
			return
		}
		want = "string"
	case reflect.Bool:
		if v.kind == yBool {
			settle(rv).SetBool(v.boolean())
			return
		}
		want = "boolean"
	case reflect.Int, reflect.Int32, reflect.Int64:
		if v.kind == yInt && !t.OverflowInt(v.integer()) {
			settle(rv).SetInt(v.integer())
			return
		}
		if v.kind == yInt || v.kind == yUint {
			d.fail(v.line, "integer %v is out of range", v.scalar())
			return
		}
		want = "integer"
	default:
		d.fail(v.line, "cannot be read from a file (Go type %s)", t)
		return
	}
	d.fail(v.line, "expected %s, got %s", want, v.typeName())
}

// spelling is the key that set a field (aliases.go).
type spelling struct{ field, key string }

func (d *objectDecoder) decodeStruct(v *yvalue, rv reflect.Value, level int) {
	t := rv.Type()
	fields := fieldsOf(t)
	var spelledBuf [8]spelling
	spelled := spelledBuf[:0]
	for i := range v.entries {
		e := &v.entries[i]
		key := e.key
		f, known := fields.byName[key]
		if !known {
			if camel, ok := camelField(t, key, fields.types); ok {
				key = camel
				f, known = fields.byName[key]
			}
		}
		n := d.child(key)
		switch {
		case !known:
			d.unknown = append(d.unknown, unknownField{line: e.line, field: string(d.path), parent: string(d.path[:n]),
				suggested: closestField(e.key, fields.types)})
		case spelledAs(spelled, key) != "" && spelledAs(spelled, key) != e.key:
			d.fail(e.line, "set twice, as %s and as %s: give one", spelledAs(spelled, key), e.key)
		case notInFiles(t, key) != "":
			d.fail(e.line, "%s", notInFiles(t, key))
		case e.value.kind == yNull:
		default:
			spelled = append(spelled, spelling{key, e.key})
			fv := rv.FieldByIndex(f.index)
			d.decode(&e.value, fv, level+1)
			d.present(e.line, fv)
		}
		d.path = d.path[:n]
	}
}

func spelledAs(spelled []spelling, field string) string {
	for _, s := range spelled {
		if s.field == field {
			return s.key
		}
	}
	return ""
}

func (d *objectDecoder) decodeMap(v *yvalue, rv reflect.Value, level int) {
	t := rv.Type()
	m := reflect.MakeMapWithSize(t, len(v.entries))
	key, elem := reflect.New(t.Key()).Elem(), reflect.New(t.Elem()).Elem()
	for i := range v.entries {
		e := &v.entries[i]
		n := d.key(e.key)
		elem.SetZero()
		d.decode(&e.value, elem, level+1)
		d.present(e.line, elem)
		key.SetString(e.key)
		m.SetMapIndex(key, elem)
		d.path = d.path[:n]
	}
	rv.Set(m)
}

func (d *objectDecoder) decodeSlice(v *yvalue, rv reflect.Value, level int) {
	s := reflect.MakeSlice(rv.Type(), len(v.items), len(v.items))
	for i := range v.items {
		n := d.index(i)
		item := s.Index(i)
		d.decode(&v.items[i], item, level+1)
		d.present(v.items[i].line, item)
		d.path = d.path[:n]
	}
	rv.Set(s)
}

// checkedPlain is tree, which decode accepted for type t, as the values
// a strict check through encoding/json would hand it: decodeObject
// still has encoding/json decode these when a value nests too deeply for
// it, to fail as it did.
func checkedPlain(v *yvalue, t reflect.Type) any {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch {
	case t == jsonValueType:
		return v.plain()
	case t.Kind() == reflect.Struct && v.kind == yMap:
		fields := jsonFields(t)
		out := make(map[string]any, len(v.entries))
		for i := range v.entries {
			e := &v.entries[i]
			key := e.key
			if _, known := fields[key]; !known {
				if camel, ok := camelField(t, key, fields); ok {
					key = camel
				}
			}
			if ft, known := fields[key]; known && e.value.kind != yNull { // unknown fields are ignored
				out[key] = checkedPlain(&e.value, ft)
			}
		}
		return out
	case t.Kind() == reflect.Map && v.kind == yMap:
		out := make(map[string]any, len(v.entries))
		for i := range v.entries {
			out[v.entries[i].key] = checkedPlain(&v.entries[i].value, t.Elem())
		}
		return out
	case t.Kind() == reflect.Slice && v.kind == ySeq:
		out := make([]any, len(v.items))
		for i := range v.items {
			out[i] = checkedPlain(&v.items[i], t.Elem())
		}
		return out
	}
	return v.scalar()
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

// structFields are the fields of a struct type by their JSON names,
// including those of embedded structs without a name of their own.
type structFields struct {
	types  map[string]reflect.Type
	byName map[string]structField
}

type structField struct {
	index []int // for reflect.Value.FieldByIndex
}

var structFieldsCache sync.Map // reflect.Type → *structFields

func fieldsOf(t reflect.Type) *structFields {
	if f, ok := structFieldsCache.Load(t); ok {
		return f.(*structFields)
	}
	fields := &structFields{types: map[string]reflect.Type{}, byName: map[string]structField{}}
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		switch {
		case name == "-" || !f.IsExported():
			continue
		case name == "" && f.Anonymous:
			embedded := fieldsOf(f.Type)
			maps.Copy(fields.types, embedded.types)
			for name, ef := range embedded.byName {
				fields.byName[name] = structField{index: append([]int{i}, ef.index...)}
			}
			continue
		case name == "":
			name = f.Name
		}
		fields.types[name] = f.Type
		fields.byName[name] = structField{index: []int{i}}
	}
	f, _ := structFieldsCache.LoadOrStore(t, fields)
	return f.(*structFields)
}

// jsonFields maps the JSON names of struct type t's fields, including those
// of embedded structs without a name of their own, to their types.
func jsonFields(t reflect.Type) map[string]reflect.Type {
	return fieldsOf(t).types
}

// closestField returns the known field closest to the unknown name, or ""
// when none is close: same letters in another case, or one edit away (two
// for longer names), a swap of neighbours counting as one. It is the
// did-you-mean of the field's warning or error (unknown.go).
func closestField(name string, fields map[string]reflect.Type) string {
	best, bestDist := "", 3
	if len(name) <= 4 {
		bestDist = 2
	}
	for _, f := range slices.Sorted(maps.Keys(fields)) {
		if strings.EqualFold(f, name) {
			return f
		}
		if d := editDistance(name, f); d < bestDist {
			best, bestDist = f, d
		}
	}
	return best
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
