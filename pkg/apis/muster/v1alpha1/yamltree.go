package v1alpha1

import (
	"fmt"
	"math"

	yaml "go.yaml.in/yaml/v3"
)

// MaxAliasValues bounds, per document, the values reached through YAML
// aliases, counting a value again each time an alias reaches it. Ordinary
// reuse of anchors stays far below it; an alias bomb ("billion laughs"),
// which a few hundred bytes expand to gigabytes, fails as soon as it passes
// it.
const MaxAliasValues = 10_000

type yvalueKind uint8

const (
	yNull yvalueKind = iota
	yBool
	yInt   // int64
	yUint  // uint64 above math.MaxInt64
	yFloat // finite float64
	yString
	yMap
	ySeq
)

// yvalue is one JSON-compatible value of a YAML document with the line it
// came from: the decoder checks fields and reports errors from it.
//
// A tree holds its values inline (entries and items are slices of values,
// scalars are not boxed), so that building it costs an allocation per
// mapping or sequence rather than one or two per value: decoding is on
// the cold start's path.
type yvalue struct {
	kind    yvalueKind
	line    int
	str     string   // yString
	bits    uint64   // yBool (0 or 1), yInt (as uint64), yUint, yFloat (math.Float64bits)
	entries []yentry // yMap, in document order; merged (<<) entries last
	items   []yvalue // ySeq
}

type yentry struct {
	key   string
	line  int // the key's line
	value yvalue
}

func (v *yvalue) boolean() bool          { return v.bits != 0 }
func (v *yvalue) integer() int64         { return int64(v.bits) }
func (v *yvalue) float() float64         { return math.Float64frombits(v.bits) }
func (v *yvalue) isString(s string) bool { return v.kind == yString && v.str == s }

// get returns the entry for key, or nil.
func (v *yvalue) get(key string) *yentry {
	for i := range v.entries {
		if v.entries[i].key == key {
			return &v.entries[i]
		}
	}
	return nil
}

// typeName names v's kind as JSON Schema does.
func (v *yvalue) typeName() string {
	return [...]string{
		yNull: "null", yBool: "boolean", yInt: "integer", yUint: "integer",
		yFloat: "number", yString: "string", yMap: "object", ySeq: "array",
	}[v.kind]
}

// scalar returns a scalar's value as encoding/json marshals it (nil for
// null).
func (v *yvalue) scalar() any {
	switch v.kind {
	case yBool:
		return v.boolean()
	case yInt:
		return v.integer()
	case yUint:
		return v.bits
	case yFloat:
		return v.float()
	case yString:
		return v.str
	}
	return nil
}

// plain converts v to the values encoding/json marshals.
func (v *yvalue) plain() any {
	switch v.kind {
	case yMap:
		m := make(map[string]any, len(v.entries))
		for i := range v.entries {
			m[v.entries[i].key] = v.entries[i].value.plain()
		}
		return m
	case ySeq:
		s := make([]any, len(v.items))
		for i := range v.items {
			s[i] = v.items[i].plain()
		}
		return s
	}
	return v.scalar()
}

// treeBuilder turns a parsed YAML document into yvalues, expanding aliases
// and merge keys within the MaxAliasValues budget.
type treeBuilder struct {
	aliasValuesLeft int
	aliasDepth      int
	aliasLine       int                 // line of the outermost alias being expanded
	expanding       map[*yaml.Node]bool // anchors being expanded, to catch an alias inside its own anchor
}

func buildTree(n *yaml.Node) (*yvalue, *FieldError) {
	b := &treeBuilder{aliasValuesLeft: MaxAliasValues}
	v := &yvalue{}
	if err := b.build(n, v); err != nil {
		return nil, err
	}
	return v, nil
}

func treeError(line int, format string, args ...any) *FieldError {
	return &FieldError{Line: line, Msg: fmt.Sprintf(format, args...)}
}

// build sets *v to the value of n.
func (b *treeBuilder) build(n *yaml.Node, v *yvalue) *FieldError {
	if b.aliasDepth > 0 {
		if b.aliasValuesLeft--; b.aliasValuesLeft < 0 {
			return treeError(b.aliasLine, "aliases expand to more than %d values (an alias bomb?)", MaxAliasValues)
		}
	}
	switch n.Kind {
	case yaml.AliasNode:
		if b.expanding[n.Alias] {
			return treeError(n.Line, "alias *%s refers to its own anchor", n.Value)
		}
		if b.expanding == nil {
			b.expanding = map[*yaml.Node]bool{}
		}
		b.expanding[n.Alias] = true
		if b.aliasDepth == 0 {
			b.aliasLine = n.Line
		}
		b.aliasDepth++
		err := b.build(n.Alias, v)
		b.aliasDepth--
		delete(b.expanding, n.Alias)
		return err
	case yaml.ScalarNode:
		return scalar(n, v)
	case yaml.SequenceNode:
		if tag := n.ShortTag(); tag != "!!seq" {
			return treeError(n.Line, "unsupported YAML tag %s", tag)
		}
		*v = yvalue{kind: ySeq, line: n.Line, items: make([]yvalue, len(n.Content))}
		for i, c := range n.Content {
			if err := b.build(c, &v.items[i]); err != nil {
				return err
			}
		}
		return nil
	case yaml.MappingNode:
		return b.mapping(n, v)
	}
	return treeError(n.Line, "unsupported YAML node")
}

// keyLines finds the keys a mapping has so far: by a scan of its entries
// while it is small, through a map once it is not.
type keyLines struct {
	entries *[]yentry
	lines   map[string]int
}

const keyLinesScanMax = 16

func (k *keyLines) lookup(key string) (int, bool) {
	if k.lines != nil {
		line, ok := k.lines[key]
		return line, ok
	}
	for i := range *k.entries {
		if e := &(*k.entries)[i]; e.key == key {
			return e.line, true
		}
	}
	return 0, false
}

// add records the entry just appended.
func (k *keyLines) add() {
	entries := *k.entries
	switch {
	case k.lines != nil:
		e := &entries[len(entries)-1]
		k.lines[e.key] = e.line
	case len(entries) > keyLinesScanMax:
		k.lines = make(map[string]int, 2*len(entries))
		for i := range entries {
			k.lines[entries[i].key] = entries[i].line
		}
	}
}

func (b *treeBuilder) mapping(n *yaml.Node, v *yvalue) *FieldError {
	if tag := n.ShortTag(); tag != "!!map" {
		return treeError(n.Line, "unsupported YAML tag %s", tag)
	}
	*v = yvalue{kind: yMap, line: n.Line, entries: make([]yentry, 0, len(n.Content)/2)}
	keys := keyLines{entries: &v.entries}
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
			return treeError(k.Line, "a mapping key must be a string, not a nested mapping or list")
		}
		if first, dup := keys.lookup(k.Value); dup {
			return treeError(k.Line, "duplicate key %q (first at line %d)", k.Value, first)
		}
		v.entries = append(v.entries, yentry{key: k.Value, line: k.Line})
		keys.add()
		if err := b.build(val, &v.entries[len(v.entries)-1].value); err != nil {
			return err
		}
	}
	// Merged keys never override the mapping's own, and an earlier merge
	// source wins over a later one (YAML's merge key rules).
	for _, m := range merges {
		var src yvalue
		if err := b.build(m, &src); err != nil {
			return err
		}
		sources := []yvalue{src}
		if src.kind == ySeq {
			sources = src.items
		}
		for i := range sources {
			s := &sources[i]
			if s.kind != yMap {
				return treeError(m.Line, "a merge key (<<) takes a mapping or a list of mappings, got %s", s.typeName())
			}
			for _, e := range s.entries {
				if _, taken := keys.lookup(e.key); !taken {
					v.entries = append(v.entries, e)
					keys.add()
				}
			}
		}
	}
	return nil
}

// scalar resolves a scalar as YAML 1.2's core schema does (yaml.v3's
// rules), keeping timestamps as the strings they are written as. The
// commonest spellings of booleans and integers are read here; the others
// are left to yaml.v3.
func scalar(n *yaml.Node, v *yvalue) *FieldError {
	*v = yvalue{line: n.Line}
	var err error
	switch tag := n.ShortTag(); tag {
	case "!!null":
		v.kind = yNull
	case "!!str", "!!timestamp":
		v.kind, v.str = yString, n.Value
	case "!!bool":
		v.kind = yBool
		switch n.Value {
		case "true", "True", "TRUE":
			v.bits = 1
		case "false", "False", "FALSE":
		default:
			var x bool
			err = n.Decode(&x)
			if x {
				v.bits = 1
			}
		}
	case "!!int":
		if x, ok := plainDecimal(n.Value); ok {
			v.kind, v.bits = yInt, uint64(x)
			break
		}
		var x int64
		if err = n.Decode(&x); err == nil {
			v.kind, v.bits = yInt, uint64(x)
			break
		}
		var u uint64
		if n.Decode(&u) != nil {
			return treeError(n.Line, "integer %s is out of range", n.Value)
		}
		v.kind, v.bits, err = yUint, u, nil
	case "!!float":
		var x float64
		err = n.Decode(&x)
		if err == nil && (math.IsNaN(x) || math.IsInf(x, 0)) {
			return treeError(n.Line, "%s is not a finite number, which JSON cannot hold", n.Value)
		}
		v.kind, v.bits = yFloat, math.Float64bits(x)
	default:
		return treeError(n.Line, "unsupported YAML tag %s", tag)
	}
	if err != nil {
		return treeError(n.Line, "invalid value %q: %v", n.Value, err)
	}
	return nil
}

// plainDecimal reads s if it is a decimal integer that yaml.v3 reads the
// same way: an optional minus, no leading zero (nor "-0"), at most 18
// digits (so no overflow).
func plainDecimal(s string) (int64, bool) {
	digits := s
	if len(digits) > 0 && digits[0] == '-' {
		digits = digits[1:]
	}
	if len(digits) == 0 || len(digits) > 18 || (digits[0] == '0' && len(s) > 1) {
		return 0, false
	}
	var x int64
	for i := 0; i < len(digits); i++ {
		c := digits[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		x = 10*x + int64(c-'0')
	}
	if len(s) > len(digits) {
		x = -x
	}
	return x, true
}
