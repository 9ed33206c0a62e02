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
type yvalue struct {
	kind    yvalueKind
	line    int
	scalar  any      // bool, int64, uint64, float64 or string
	entries []yentry // yMap, in document order; merged (<<) entries last
	items   []*yvalue
}

type yentry struct {
	key   string
	line  int // the key's line
	value *yvalue
}

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

// plain converts v to the values encoding/json marshals.
func (v *yvalue) plain() any {
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

// treeBuilder turns a parsed YAML document into yvalues, expanding aliases
// and merge keys within the MaxAliasValues budget.
type treeBuilder struct {
	aliasValuesLeft int
	aliasDepth      int
	aliasLine       int                 // line of the outermost alias being expanded
	expanding       map[*yaml.Node]bool // anchors being expanded, to catch an alias inside its own anchor
}

func buildTree(n *yaml.Node) (*yvalue, *FieldError) {
	b := &treeBuilder{aliasValuesLeft: MaxAliasValues, expanding: map[*yaml.Node]bool{}}
	return b.build(n)
}

func treeError(line int, format string, args ...any) *FieldError {
	return &FieldError{Line: line, Msg: fmt.Sprintf(format, args...)}
}

func (b *treeBuilder) build(n *yaml.Node) (*yvalue, *FieldError) {
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
		return scalar(n)
	case yaml.SequenceNode:
		if tag := n.ShortTag(); tag != "!!seq" {
			return nil, treeError(n.Line, "unsupported YAML tag %s", tag)
		}
		v := &yvalue{kind: ySeq, line: n.Line, items: make([]*yvalue, 0, len(n.Content))}
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

func (b *treeBuilder) mapping(n *yaml.Node) (*yvalue, *FieldError) {
	if tag := n.ShortTag(); tag != "!!map" {
		return nil, treeError(n.Line, "unsupported YAML tag %s", tag)
	}
	v := &yvalue{kind: yMap, line: n.Line}
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
		v.entries = append(v.entries, yentry{key: k.Value, line: k.Line, value: item})
	}
	// Merged keys never override the mapping's own, and an earlier merge
	// source wins over a later one (YAML's merge key rules).
	for _, m := range merges {
		src, err := b.build(m)
		if err != nil {
			return nil, err
		}
		sources := []*yvalue{src}
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

// scalar resolves a scalar as YAML 1.2's core schema does (yaml.v3's
// rules), keeping timestamps as the strings they are written as.
func scalar(n *yaml.Node) (*yvalue, *FieldError) {
	v := &yvalue{line: n.Line}
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
