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
// reported at the line of its nearest ancestor that is there.
type fieldPath struct {
	parent *fieldPath
	s      string
}

func (p *fieldPath) String() string {
	if p == nil {
		return ""
	}
	return p.s
}

// Child is the path of a struct field.
func (p *fieldPath) Child(name string) *fieldPath {
	if p == nil {
		return &fieldPath{s: name}
	}
	return &fieldPath{parent: p, s: p.s + "." + name}
}

// Index is the path of a list item.
func (p *fieldPath) Index(i int) *fieldPath {
	return &fieldPath{parent: p, s: p.String() + "[" + strconv.Itoa(i) + "]"}
}

// Key is the path of a map entry, spelled as Kubernetes does: env[HOME].
func (p *fieldPath) Key(k string) *fieldPath {
	return &fieldPath{parent: p, s: p.String() + "[" + k + "]"}
}
