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
