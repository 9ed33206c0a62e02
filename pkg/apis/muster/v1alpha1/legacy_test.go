package v1alpha1

// The decoder as it was before the strict decoder's single walk and the
// YAML fast path made it cheaper, kept as the reference the differential tests (legacy_diff_test.go) hold
// the decoder to: the same documents, hashes and errors for every input.
// Only the parts since rewritten are kept here; the rest is shared.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"strings"
	"unicode/utf8"

	yaml "go.yaml.in/yaml/v3"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/musterd/musterd/pkg/events"
)

// legacyValue is one JSON-compatible value of a YAML document with the line it
// came from: the decoder checks fields and reports errors from it.
type legacyValue struct {
	kind    yvalueKind
	line    int
	scalar  any           // bool, int64, uint64, float64 or string
	entries []legacyEntry // yMap, in document order; merged (<<) entries last
	items   []*legacyValue
}

type legacyEntry struct {
	key   string
	line  int // the key's line
	value *legacyValue
}

// get returns the entry for key, or nil.
func (v *legacyValue) get(key string) *legacyEntry {
	for i := range v.entries {
		if v.entries[i].key == key {
			return &v.entries[i]
		}
	}
	return nil
}

// typeName names v's kind as JSON Schema does.
func (v *legacyValue) typeName() string {
	return [...]string{
		yNull: "null", yBool: "boolean", yInt: "integer", yUint: "integer",
		yFloat: "number", yString: "string", yMap: "object", ySeq: "array",
	}[v.kind]
}

// plain converts v to the values encoding/json marshals.
func (v *legacyValue) plain() any {
	switch v.kind {
	case yMap:
		m := make(map[string]any, len(v.entries))
		for _, e := range v.entries {
			m[e.key] = e.value.plain()
		}
		return m
	case ySeq:
		s := make([]any, len(v.items))
		for i, item := range v.items {
			s[i] = item.plain()
		}
		return s
	}
	return v.scalar
}

// legacyTreeBuilder turns a parsed YAML document into yvalues, expanding aliases
// and merge keys within the MaxAliasValues budget.
type legacyTreeBuilder struct {
	aliasValuesLeft int
	aliasDepth      int
	aliasLine       int                 // line of the outermost alias being expanded
	expanding       map[*yaml.Node]bool // anchors being expanded, to catch an alias inside its own anchor
}

func legacyBuildTree(n *yaml.Node) (*legacyValue, *FieldError) {
	b := &legacyTreeBuilder{aliasValuesLeft: MaxAliasValues, expanding: map[*yaml.Node]bool{}}
	return b.build(n)
}

func (b *legacyTreeBuilder) build(n *yaml.Node) (*legacyValue, *FieldError) {
	if b.aliasDepth > 0 {
		if b.aliasValuesLeft--; b.aliasValuesLeft < 0 {
			return nil, treeError(b.aliasLine, "aliases expand to more than %d values (an alias bomb?)", MaxAliasValues)
		}
	}
	switch n.Kind {
	case yaml.AliasNode:
		if b.expanding[n.Alias] {
			return nil, treeError(n.Line, "alias *%s refers to its own anchor", n.Value)
		}
		b.expanding[n.Alias] = true
		if b.aliasDepth == 0 {
			b.aliasLine = n.Line
		}
		b.aliasDepth++
		v, err := b.build(n.Alias)
		b.aliasDepth--
		delete(b.expanding, n.Alias)
		return v, err
	case yaml.ScalarNode:
		return legacyScalar(n)
	case yaml.SequenceNode:
		if tag := n.ShortTag(); tag != "!!seq" {
			return nil, treeError(n.Line, "unsupported YAML tag %s", tag)
		}
		v := &legacyValue{kind: ySeq, line: n.Line, items: make([]*legacyValue, 0, len(n.Content))}
		for _, c := range n.Content {
			item, err := b.build(c)
			if err != nil {
				return nil, err
			}
			v.items = append(v.items, item)
		}
		return v, nil
	case yaml.MappingNode:
		return b.mapping(n)
	}
	return nil, treeError(n.Line, "unsupported YAML node")
}

func (b *legacyTreeBuilder) mapping(n *yaml.Node) (*legacyValue, *FieldError) {
	if tag := n.ShortTag(); tag != "!!map" {
		return nil, treeError(n.Line, "unsupported YAML tag %s", tag)
	}
	v := &legacyValue{kind: yMap, line: n.Line}
	lineOfKey := map[string]int{}
	var merges []*yaml.Node
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, val := n.Content[i], n.Content[i+1]
		if k.Kind == yaml.ScalarNode && k.ShortTag() == "!!merge" {
			merges = append(merges, val)
			continue
		}
		if k.Kind == yaml.AliasNode {
			k = k.Alias
		}
		if k.Kind != yaml.ScalarNode {
			return nil, treeError(k.Line, "a mapping key must be a string, not a nested mapping or list")
		}
		if first, dup := lineOfKey[k.Value]; dup {
			return nil, treeError(k.Line, "duplicate key %q (first at line %d)", k.Value, first)
		}
		lineOfKey[k.Value] = k.Line
		item, err := b.build(val)
		if err != nil {
			return nil, err
		}
		v.entries = append(v.entries, legacyEntry{key: k.Value, line: k.Line, value: item})
	}
	// Merged keys never override the mapping's own, and an earlier merge
	// source wins over a later one (YAML's merge key rules).
	for _, m := range merges {
		src, err := b.build(m)
		if err != nil {
			return nil, err
		}
		sources := []*legacyValue{src}
		if src.kind == ySeq {
			sources = src.items
		}
		for _, s := range sources {
			if s.kind != yMap {
				return nil, treeError(m.Line, "a merge key (<<) takes a mapping or a list of mappings, got %s", s.typeName())
			}
			for _, e := range s.entries {
				if _, taken := lineOfKey[e.key]; !taken {
					lineOfKey[e.key] = e.line
					v.entries = append(v.entries, e)
				}
			}
		}
	}
	return v, nil
}

// legacyScalar resolves a scalar as YAML 1.2's core schema does (yaml.v3's
// rules), keeping timestamps as the strings they are written as.
func legacyScalar(n *yaml.Node) (*legacyValue, *FieldError) {
	v := &legacyValue{line: n.Line}
	var err error
	switch tag := n.ShortTag(); tag {
	case "!!null":
		v.kind = yNull
	case "!!str", "!!timestamp":
		v.kind, v.scalar = yString, n.Value
	case "!!bool":
		var x bool
		err = n.Decode(&x)
		v.kind, v.scalar = yBool, x
	case "!!int":
		var x int64
		if err = n.Decode(&x); err == nil {
			v.kind, v.scalar = yInt, x
			break
		}
		var u uint64
		if n.Decode(&u) != nil {
			return nil, treeError(n.Line, "integer %s is out of range", n.Value)
		}
		v.kind, v.scalar, err = yUint, u, nil
	case "!!float":
		var x float64
		err = n.Decode(&x)
		if err == nil && (math.IsNaN(x) || math.IsInf(x, 0)) {
			return nil, treeError(n.Line, "%s is not a finite number, which JSON cannot hold", n.Value)
		}
		v.kind, v.scalar = yFloat, x
	default:
		return nil, treeError(n.Line, "unsupported YAML tag %s", tag)
	}
	if err != nil {
		return nil, treeError(n.Line, "invalid value %q: %v", n.Value, err)
	}
	return v, nil
}

func legacyDecodeFile(path string, data []byte) ([]Document, error) {
	return decodeFile(nil, path, data, legacyCheckText, parseDocuments, legacyDecodeDocument)
}

// legacyCheckText requires UTF-8 text of YAML's printable characters, reporting
// the line of the first offence; the YAML parser would reject both but
// without a line.
func legacyCheckText(data []byte) *FieldError {
	line := 1
	for i := 0; i < len(data); {
		r, size := utf8.DecodeRune(data[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			return &FieldError{Line: line, Msg: "not UTF-8 text"}
		case r == '\n':
			line++
		case r == '\t' || r == '\r' || r == 0x85 || (r >= 0x20 && r <= 0x7E) ||
			(r >= 0xA0 && r <= 0xD7FF) || (r >= 0xE000 && r <= 0xFFFD && (r != 0xFEFF || i == 0)) || r >= 0x10000:
		default:
			return &FieldError{Line: line, Msg: fmt.Sprintf("character %U is not allowed in YAML", r)}
		}
		i += size
	}
	return nil
}

// legacyDecodeDocument decodes one non-empty document. Its error return is for
// problems that hide the document's identity; the others go in Document.Err.
func legacyDecodeDocument(n *yaml.Node, defaultName string) (Document, *FieldError) {
	doc := Document{Line: n.Line}
	tree, ferr := legacyBuildTree(n)
	if ferr != nil {
		return doc, ferr
	}
	if tree.kind != yMap {
		return doc, &FieldError{Line: doc.Line, Msg: fmt.Sprintf("a document must be a mapping, got %s", tree.typeName())}
	}
	if ferr := legacyReadIdentity(tree, &doc, defaultName); ferr != nil {
		return doc, ferr
	}

	var obj Object
	switch doc.Kind {
	case KindMCPServer:
		obj = &MCPServer{}
	case KindWorkflow:
		obj = &Workflow{}
	}
	errs, warnings := legacyDecodeObject(tree, obj, doc)
	doc.Warnings = warnings
	if len(errs) == 0 {
		obj.SetName(doc.Name)
		obj.SetNamespace(doc.Namespace)
		obj.Default()
		doc.Object = obj
		doc.Hash = hashJSON(obj, warnings)
	} else {
		errs.sort()
		doc.Err = errs
		doc.Hash = hashJSON(tree.plain(), warnings)
	}
	return doc, nil
}

// legacyReadIdentity fills in doc's kind, namespace and name, defaulting the last
// two.
func legacyReadIdentity(tree *legacyValue, doc *Document, defaultName string) *FieldError {
	kind := tree.get("kind")
	switch {
	case kind == nil || kind.value.kind == yNull:
		return &FieldError{Line: doc.Line, Field: "kind", Msg: "required: must be MCPServer or Workflow"}
	case kind.value.kind != yString:
		return &FieldError{Line: kind.line, Field: "kind", Msg: "expected string, got " + kind.value.typeName()}
	case kind.value.scalar != KindMCPServer && kind.value.scalar != KindWorkflow:
		return &FieldError{Line: kind.line, Field: "kind", Msg: fmt.Sprintf("unsupported kind %q: must be MCPServer or Workflow", kind.value.scalar)}
	}
	doc.Kind = kind.value.scalar.(string)

	// Further checks of metadata's shape come with the other fields'.
	var name, namespace *legacyEntry
	if meta := tree.get("metadata"); meta != nil && meta.value.kind == yMap {
		name, namespace = meta.value.get("name"), meta.value.get("namespace")
	}
	var ferr *FieldError
	if doc.Name, ferr = legacyIdentityField(name, "metadata.name", defaultName, doc.Line, validation.IsDNS1123Subdomain); ferr != nil {
		return ferr
	}
	if doc.Name == "" {
		return &FieldError{Line: doc.Line, Field: "metadata.name", Msg: "required in a file with more than one document"}
	}
	doc.Namespace, ferr = legacyIdentityField(namespace, "metadata.namespace", events.DefaultNamespace, doc.Line, validation.IsDNS1123Label)
	return ferr
}

// legacyIdentityField reads metadata.name or metadata.namespace, which must be
// valid Kubernetes names: musterd keys resources and their status files by
// them.
func legacyIdentityField(e *legacyEntry, field, fallback string, docLine int, valid func(string) []string) (string, *FieldError) {
	if e == nil || e.value.kind == yNull {
		if msgs := valid(fallback); fallback != "" && len(msgs) > 0 {
			return "", &FieldError{Line: docLine, Field: field, Msg: fmt.Sprintf("not set, and the file name %q is no valid default: %s", fallback, strings.Join(msgs, "; "))}
		}
		return fallback, nil
	}
	if e.value.kind != yString {
		return "", &FieldError{Line: e.line, Field: field, Msg: "expected string, got " + e.value.typeName()}
	}
	s := e.value.scalar.(string)
	if msgs := valid(s); len(msgs) > 0 {
		return "", &FieldError{Line: e.line, Field: field, Msg: fmt.Sprintf("invalid value %q: %s", s, strings.Join(msgs, "; "))}
	}
	return s, nil
}

// legacyDecodeObject checks tree field by field against obj's type, decodes it
// into obj and validates the result, returning every problem found and
// the warnings about the fields it ignored.
func legacyDecodeObject(tree *legacyValue, obj Object, doc Document) (FieldErrors, FieldErrors) {
	if av := tree.get("apiVersion"); av == nil || av.value.scalar != APIVersion {
		if av == nil {
			return FieldErrors{{Line: doc.Line, Field: "apiVersion", Msg: "required: must be " + APIVersion}}, nil
		}
		got, _ := json.Marshal(av.value.plain())
		return FieldErrors{{Line: av.line, Field: "apiVersion", Msg: fmt.Sprintf("unsupported value %s: must be %s", got, APIVersion)}}, nil
	}
	checker := &legacyChecker{lines: map[string]int{"": doc.Line}}
	plain := checker.check(tree, reflect.TypeOf(obj).Elem(), nil)
	if len(checker.errs) > 0 {
		return settleUnknown(checker.errs, checker.unknown)
	}
	data, err := json.Marshal(plain)
	if err == nil {
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.DisallowUnknownFields()
		err = dec.Decode(obj)
	}
	if err != nil {
		// The field check leaves encoding/json little to object to (nesting
		// deeper than it allows); whatever it is, report it where it points.
		return settleUnknown(decodeFailure(err, &documentFields{lineMap: checker.lines}), checker.unknown)
	}
	v := &validator{file: &documentFields{lineMap: checker.lines}}
	validateFileMetadata(v, obj)
	switch o := obj.(type) {
	case *MCPServer:
		o.validate(v)
	case *Workflow:
		o.validate(v)
	}
	return v.settle(checker.unknown)
}

// legacyChecker checks a document's tree against a Go type. It knows field
// names only from json tags, so the types stay the one source of the
// schema; encoding/json alone would not do, as it matches names regardless
// of case.
type legacyChecker struct {
	lines   map[string]int // path of every field present → its line
	errs    FieldErrors
	unknown []unknownField // the fields the types do not have, ignored
}

func (c *legacyChecker) fail(line int, p *fieldPath, format string, args ...any) {
	c.errs = append(c.errs, &FieldError{Line: line, Field: p.String(), Msg: fmt.Sprintf(format, args...)})
}

// check walks v against type t. It records the line of every field present,
// reports every field t lacks and every value of the wrong type, and returns
// v as encoding/json values without null struct fields, which mean "not
// set" as they do to an API server.
func (c *legacyChecker) check(v *legacyValue, t reflect.Type, p *fieldPath) any {
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
			for _, e := range v.entries {
				ep := p.Key(e.key)
				c.lines[ep.String()] = e.line
				out[e.key] = c.check(e.value, t.Elem(), ep)
			}
			return out
		}
		want = "object"
	case reflect.Slice:
		if v.kind == ySeq {
			out := make([]any, len(v.items))
			for i, item := range v.items {
				ip := p.Index(i)
				c.lines[ip.String()] = item.line
				out[i] = c.check(item, t.Elem(), ip)
			}
			return out
		}
		want = "array"
	case reflect.String:
		if v.kind == yString {
			return v.scalar
		}
		want = "string"
	case reflect.Bool:
		if v.kind == yBool {
			return v.scalar
		}
		want = "boolean"
	case reflect.Int, reflect.Int32, reflect.Int64:
		if v.kind == yInt && !reflect.Zero(t).OverflowInt(v.scalar.(int64)) {
			return v.scalar
		}
		if v.kind == yInt || v.kind == yUint {
			c.fail(v.line, p, "integer %v is out of range", v.scalar)
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

func (c *legacyChecker) checkStruct(v *legacyValue, t reflect.Type, p *fieldPath) any {
	fields := jsonFields(t)
	out := make(map[string]any, len(v.entries))
	spelled := map[string]string{} // field → the key that set it (aliases.go)
	for _, e := range v.entries {
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
			c.unknown = append(c.unknown, unknownField{line: e.line, field: fp.String(), parent: p.String(), suggested: closestField(e.key, fields)})
		case spelled[key] != "" && spelled[key] != e.key:
			c.fail(e.line, fp, "set twice, as %s and as %s: give one", spelled[key], e.key)
		case notInFiles(t, key) != "":
			c.fail(e.line, fp, "%s", notInFiles(t, key))
		case e.value.kind == yNull:
		default:
			spelled[key] = e.key
			c.lines[fp.String()] = e.line
			out[key] = c.check(e.value, ft, fp)
		}
	}
	return out
}
