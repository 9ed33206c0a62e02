package v1alpha1

import (
	"cmp"
	"slices"
	"strconv"
	"strings"
)

// FieldError is one problem with a document or one of its fields. Error
// reads "file:line: field: msg"; parts that are unknown are left out, so an
// object validated without a file (Kubernetes mode) reads "field: msg".
//
// +kubebuilder:object:generate=false
type FieldError struct {
	File  string // the file as passed to DecodeFile; empty outside files
	Line  int    // 1-based; 0 when unknown
	Field string // path such as spec.steps[2].tool or spec.env[HOME]; empty for the whole document
	Msg   string

	// Cause, Path, Fields and First say what Msg says, for programs that
	// answer in words of their own (the core tools answer in muster's):
	// they need not parse Msg. Error does not show them. They are set by
	// validation (Validate, and DecodeFile once a document decodes); the
	// decoder's own errors (syntax, types, unknown fields) are CauseInvalid,
	// most with no Path.
	Cause Cause
	// Path is Field element by element.
	Path FieldPath
	// Fields are the fields of the object at Path the problem is about:
	// for CauseOneOf those of the exclusive set that are set (none, or
	// more than one); for CauseRequired of an object rather than a field,
	// those of which it needs one.
	Fields []string
	// First is where the value was used first, for CauseDuplicate.
	First FieldPath
}

// Cause is the kind of problem a FieldError reports.
type Cause uint8

const (
	// CauseInvalid is any problem not named below; Msg says which.
	CauseInvalid Cause = iota
	// CauseRequired: the field is not set (outside files, where unset and
	// empty cannot be told apart: not set or empty).
	CauseRequired
	// CauseEmpty: the field is set, but to an empty value ("" or an empty
	// list) where it needs one.
	CauseEmpty
	// CauseDuplicate: the value was already used, at First.
	CauseDuplicate
	// CauseOneOf: exactly one of a set of fields must be set, and Fields
	// are the ones that are.
	CauseOneOf
)

// PathKind is what a PathElement steps into.
type PathKind uint8

const (
	PathField PathKind = iota // a field of an object: Name
	PathItem                  // an item of a list: Index
	PathEntry                 // an entry of a map: Name is its key
)

// PathElement is one step of a FieldPath.
type PathElement struct {
	Kind  PathKind
	Name  string
	Index int
}

// FieldPath is a path to a field, from the document's root: spec, steps,
// item 2, tool is spec.steps[2].tool.
type FieldPath []PathElement

// String spells the path as FieldError.Field does.
func (p FieldPath) String() string {
	var b strings.Builder
	for i, e := range p {
		switch e.Kind {
		case PathItem:
			b.WriteString("[" + strconv.Itoa(e.Index) + "]")
		case PathEntry:
			b.WriteString("[" + e.Name + "]")
		default:
			if i > 0 {
				b.WriteByte('.')
			}
			b.WriteString(e.Name)
		}
	}
	return b.String()
}

func (e *FieldError) Error() string {
	var b strings.Builder
	if e.File != "" {
		b.WriteString(e.File)
		if e.Line > 0 {
			b.WriteString(":" + strconv.Itoa(e.Line))
		}
		b.WriteString(": ")
	}
	if e.Field != "" {
		b.WriteString(e.Field + ": ")
	}
	b.WriteString(e.Msg)
	return b.String()
}

// FieldErrors are all the problems found in one document, ordered by line;
// problems on one line keep the order of the fields in the type. Use
// [FieldErrors.Err] to turn it into an error: a nil FieldErrors in an error
// interface is not a nil error.
//
// +kubebuilder:object:generate=false
type FieldErrors []*FieldError

func (es FieldErrors) Error() string {
	msgs := make([]string, len(es))
	for i, e := range es {
		msgs[i] = e.Error()
	}
	return strings.Join(msgs, "\n")
}

// Unwrap lets errors.As find each *FieldError.
func (es FieldErrors) Unwrap() []error {
	errs := make([]error, len(es))
	for i, e := range es {
		errs[i] = e
	}
	return errs
}

// Err returns es as an error, or nil when es is empty.
func (es FieldErrors) Err() error {
	if len(es) == 0 {
		return nil
	}
	return es
}

func (es FieldErrors) sort() {
	slices.SortStableFunc(es, func(a, b *FieldError) int { return cmp.Compare(a.Line, b.Line) })
}

// fieldPath is a path to a field, built from the root (nil) by Child, Index
// and Key. It keeps its parent so that a field missing from a file can be
// reported at the line of its nearest ancestor that is there. It is spelled
// out only when asked (String): validation builds a path for every field it
// checks but needs few of them spelled, those of the errors.
type fieldPath struct {
	parent *fieldPath
	s      string // the whole path (pathWhole), the field (pathChild) or the key (pathKey)
	index  int    // pathIndex
	step   pathStep
}

// pathStep is how a fieldPath extends its parent.
type pathStep uint8

const (
	pathWhole pathStep = iota // s is the whole path: no parent
	pathChild
	pathIndex
	pathKey
)

func (p *fieldPath) String() string {
	if p == nil {
		return ""
	}
	// A copy even of a whole path, so that no string of p's outlives the
	// call and Go may keep paths on the stack.
	var buf [64]byte
	return string(p.appendTo(buf[:0]))
}

func (p *fieldPath) appendTo(b []byte) []byte {
	if p == nil {
		return b
	}
	switch p.step {
	case pathChild:
		b = append(p.parent.appendTo(b), '.')
		return append(b, p.s...)
	case pathIndex:
		b = append(p.parent.appendTo(b), '[')
		return append(strconv.AppendInt(b, int64(p.index), 10), ']')
	case pathKey:
		b = append(p.parent.appendTo(b), '[')
		return append(append(b, p.s...), ']')
	}
	return append(b, p.s...)
}

// elements is p element by element. A whole path (pathWhole), which is
// not taken apart, is one field element.
func (p *fieldPath) elements() FieldPath {
	n := 0
	for q := p; q != nil; q = q.parent {
		n++
	}
	out := make(FieldPath, n)
	for q := p; q != nil; q = q.parent {
		n--
		switch q.step {
		case pathIndex:
			out[n] = PathElement{Kind: PathItem, Index: q.index}
		case pathKey:
			out[n] = PathElement{Kind: PathEntry, Name: q.s}
		default:
			out[n] = PathElement{Kind: PathField, Name: q.s}
		}
	}
	return out
}

// Child is the path of a struct field.
func (p *fieldPath) Child(name string) *fieldPath {
	if p == nil {
		return &fieldPath{s: name}
	}
	return &fieldPath{parent: p, s: name, step: pathChild}
}

// Index is the path of a list item.
func (p *fieldPath) Index(i int) *fieldPath {
	return &fieldPath{parent: p, index: i, step: pathIndex}
}

// Key is the path of a map entry, spelled as Kubernetes does: env[HOME].
func (p *fieldPath) Key(k string) *fieldPath {
	return &fieldPath{parent: p, s: k, step: pathKey}
}
