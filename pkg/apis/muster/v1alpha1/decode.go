package v1alpha1

import (
	"bytes"
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	yaml "go.yaml.in/yaml/v3"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/musterd/musterd/pkg/events"
)

// MaxFileSize is the largest definition file DecodeFile reads, 4 MiB: far
// above any real definition, far below what would strain musterd. Readers
// should stop reading past it (io.LimitReader(f, MaxFileSize+1)).
const MaxFileSize = 4 << 20

// Object is what a definition file declares: *MCPServer or *Workflow.
//
// +kubebuilder:object:generate=false
type Object interface {
	runtime.Object
	metav1.Object
	// Default fills in the CRD's defaults for unset fields.
	Default()
	// Validate checks the object against the CRD's rules.
	Validate() FieldErrors
}

// Document is one resource declared in a file.
//
// +kubebuilder:object:generate=false
type Document struct {
	Kind      string // KindMCPServer or KindWorkflow
	Namespace string // as written, else "default"
	Name      string // as written, else (in a single-document file) the file's name without extension
	Line      int    // line of the document's first field
	// Object is the decoded, validated and defaulted resource, with Name and
	// Namespace filled in; nil when Err is set.
	Object Object
	// Hash is "sha256:<hex>" of the document's canonical JSON: the defaulted
	// Object's, or, when Err is set, the document's own, followed by the
	// Warnings, if any. Comments, layout, key order and spelling out a
	// default do not change it, except that they may move a warning to
	// another line; any change of content does.
	Hash string
	// Err holds every problem of this document (a FieldErrors), when its
	// identity is known; problems that hide the identity are DecodeFile's
	// error instead.
	Err error
	// Warnings are what the decoder ignored: fields the types do not have
	// (as muster's loader ignores them), each naming file, line and field
	// ("workflows/a.yaml:7: spec.input_schema: unknown field, ignored"),
	// and settings muster's loader accepts and ignores but its tools
	// refuse (a stdio server's auth.type oauth). An unknown field that
	// likely misspells a field whose absence is a problem is in Err
	// instead. Ordered by line.
	Warnings FieldErrors
}

// Key is the document's resource key.
func (d Document) Key() events.Key {
	return events.NewKey(d.Kind, d.Namespace, d.Name)
}

// DecodeFile decodes the MCPServer and Workflow documents of one definition
// file, strictly but for unknown fields: every value of the right type,
// every document of apiVersion muster.giantswarm.io/v1alpha1. A field the
// Go types do not have (names match exactly, case included) is ignored, as
// muster's loader ignores it, with a warning in Document.Warnings; it is an
// error only when it likely misspells a field whose absence or value is
// itself an error (unknown.go). path names the file in errors and
// warnings and, for a single-document file, provides the default name.
//
// Documents are separated by "---"; empty ones (comments only) are
// skipped, so an empty file yields no documents. A problem confined to one
// document whose kind, namespace and name are readable goes into that
// Document's Err, so the file's other documents keep their identity. A
// problem that leaves a document's identity unknown (invalid YAML, a
// missing or unknown kind, a missing name in a multi-document file, an
// invalid name) fails the whole file: the returned error is a *FieldError
// naming the file and line, and no documents are returned.
func DecodeFile(path string, data []byte) ([]Document, error) {
	return AppendFile(nil, path, data)
}

// AppendFile is DecodeFile appending the documents to dst, for a caller
// that reuses one slice across files: a scan of many files allocating a
// one-document slice (128 bytes) for each, between the allocations of the
// definitions that stay, leaves the spans of that size class partly empty
// at rest (when it was 104 bytes, the size of a small workflow's steps'
// array, a quarter of them).
// On an error it returns dst unchanged.
func AppendFile(dst []Document, path string, data []byte) ([]Document, error) {
	p := fastParsers.Get().(*fastParser)
	defer p.release() // the trees are in p's arenas, and dead once decoded
	return decodeFile(dst, path, data, checkText, p.parseFile, decodeDocument)
}

// decodeFile is DecodeFile with the text check, the parser and the
// document decoder given: the differential test (legacy_diff_test.go)
// hands it those of the legacy decoder. parse returns the file's
// non-empty documents, each of which decodeDocument decodes in turn.
func decodeFile[D any](dst []Document, path string, data []byte, checkText func([]byte) *FieldError,
	parse func([]byte) ([]D, *FieldError), decodeDocument func(D, string) (Document, *FieldError)) ([]Document, error) {
	if len(data) > MaxFileSize {
		return dst, &FieldError{File: path, Msg: fmt.Sprintf("file is %d bytes, more than the limit of %d", len(data), MaxFileSize)}
	}
	if ferr := checkText(data); ferr != nil {
		ferr.File = path
		return dst, ferr
	}
	nodes, ferr := parse(data)
	if ferr != nil {
		ferr.File = path
		return dst, ferr
	}
	docs := slices.Grow(dst, len(nodes))
	if docs == nil {
		docs = []Document{} // DecodeFile of a file without documents: empty, not nil, as ever
	}
	defaultName := ""
	if len(nodes) == 1 {
		defaultName = strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))
	}
	for _, n := range nodes {
		doc, ferr := decodeDocument(n, defaultName)
		if ferr != nil {
			ferr.File = path
			clear(docs[len(dst):])
			return dst, ferr
		}
		docs = append(docs, doc)
	}
	added := docs[len(dst):]
	rejectDuplicates(added)
	for i := range added {
		var fes FieldErrors
		if errors.As(added[i].Err, &fes) {
			for _, fe := range fes {
				fe.File = path
			}
		}
		for _, w := range added[i].Warnings {
			w.File = path
		}
	}
	return docs, nil
}

// checkText requires UTF-8 text of YAML's printable characters, reporting
// the line of the first offence; the YAML parser would reject both but
// without a line.
func checkText(data []byte) *FieldError {
	line := 1
	for i := 0; i < len(data); {
		if c := data[i]; c < utf8.RuneSelf { // the common case, without decoding
			switch {
			case c == '\n':
				line++
			case c == '\t' || c == '\r' || (c >= 0x20 && c <= 0x7E):
			default:
				return &FieldError{Line: line, Msg: fmt.Sprintf("character %U is not allowed in YAML", rune(c))}
			}
			i++
			continue
		}
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

var (
	yamlLinePrefix    = regexp.MustCompile(`^line (\d+): `)
	yamlUnknownAnchor = regexp.MustCompile(`^unknown anchor '(.*)' referenced$`)
)

// syntaxError turns the YAML parser's error into a FieldError with the
// line of the problem. The parser counts lines from 0 in the errors of its
// parsing stage (those of its scanning stage count from 1), leaves out a
// line 0, and gives none for an unknown anchor.
func syntaxError(data []byte, err error) *FieldError {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	line := 1
	if m := yamlLinePrefix.FindStringSubmatch(msg); m != nil {
		line, _ = strconv.Atoi(m[1])
		msg = msg[len(m[0]):]
		if strings.HasPrefix(msg, "did not find expected ") || strings.HasPrefix(msg, "found duplicate %") ||
			msg == "found incompatible YAML document" || msg == "found undefined tag handle" {
			line++
		}
	} else if m := yamlUnknownAnchor.FindStringSubmatch(msg); m != nil {
		line = lineOfAlias(data, m[1])
	}
	return &FieldError{Line: line, Msg: "invalid YAML: " + msg}
}

// lineOfAlias returns the line of the first "*name" in data that is not
// part of a longer name.
func lineOfAlias(data []byte, name string) int {
	alias := []byte("*" + name)
	for i := 0; ; {
		j := bytes.Index(data[i:], alias)
		if j < 0 {
			return 1
		}
		end := i + j + len(alias)
		if end == len(data) || bytes.IndexByte([]byte(" \t\r\n,]}"), data[end]) >= 0 {
			return 1 + bytes.Count(data[:i+j], []byte("\n"))
		}
		i = end
	}
}

// parseDocuments parses every document of data, dropping empty ones.
func parseDocuments(data []byte) (nodes []*yaml.Node, ferr *FieldError) {
	// A parser panic on some odd input must not take musterd down with it.
	defer func() {
		if r := recover(); r != nil {
			nodes, ferr = nil, &FieldError{Msg: fmt.Sprintf("invalid YAML: parser failed: %v", r)}
		}
	}()
	dec := yaml.NewDecoder(bytes.NewReader(data))
	for {
		var n yaml.Node
		err := dec.Decode(&n)
		if errors.Is(err, io.EOF) {
			return nodes, nil
		}
		if err != nil {
			return nil, syntaxError(data, err)
		}
		if c := n.Content[0]; c.Kind != yaml.ScalarNode || c.ShortTag() != "!!null" {
			nodes = append(nodes, c)
		}
	}
}

// parsedDocument is a non-empty document of a file as parseFile read it:
// its tree, when the fast path built it, or else yaml.v3's node, whose
// tree decodeDocument builds. (Built there, and not all at once as the
// file is parsed, a document's tree error follows the errors of the
// documents before it, as it always has.)
type parsedDocument struct {
	tree *yvalue
	node *yaml.Node
}

// parseFile parses data's documents by the fast path (yamlfast.go) if it
// can, and otherwise by yaml.v3. The fast path's trees are good until p is
// released.
func (p *fastParser) parseFile(data []byte) ([]parsedDocument, *FieldError) {
	if trees, ok := p.parse(data); ok {
		docs := make([]parsedDocument, len(trees))
		for i, t := range trees {
			docs[i].tree = t
		}
		return docs, nil
	}
	nodes, ferr := parseDocuments(data)
	docs := make([]parsedDocument, len(nodes))
	for i, n := range nodes {
		docs[i].node = n
	}
	return docs, ferr
}

// decodeDocument decodes one non-empty document. Its error return is for
// problems that hide the document's identity; the others go in Document.Err.
func decodeDocument(d parsedDocument, defaultName string) (Document, *FieldError) {
	tree := d.tree
	if tree == nil {
		var ferr *FieldError
		if tree, ferr = buildTree(d.node); ferr != nil {
			return Document{Line: d.node.Line}, ferr
		}
	}
	doc := Document{Line: tree.line} // the line of the root, as yaml.v3 numbers it
	if tree.kind != yMap {
		return doc, &FieldError{Line: doc.Line, Msg: fmt.Sprintf("a document must be a mapping, got %s", tree.typeName())}
	}
	if ferr := readIdentity(tree, &doc, defaultName); ferr != nil {
		return doc, ferr
	}

	var obj Object
	var typeMeta *metav1.TypeMeta
	switch doc.Kind {
	case KindMCPServer:
		o := &MCPServer{}
		obj, typeMeta = o, &o.TypeMeta
	case KindWorkflow:
		o := &Workflow{}
		obj, typeMeta = o, &o.TypeMeta
	}
	errs, warnings := decodeObject(tree, obj, doc)
	doc.Warnings = warnings
	if len(errs) == 0 {
		// apiVersion and kind were checked to be these: the constants
		// take the place of the decoded copies, 40 bytes a definition.
		*typeMeta = metav1.TypeMeta{APIVersion: APIVersion, Kind: doc.Kind}
		obj.SetName(doc.Name)
		obj.SetNamespace(doc.Namespace)
		obj.Default()
		doc.Object = obj
		doc.Hash = hashJSON(obj, warnings)
	} else {
		errs.sort()
		doc.Err = errs
		// The hash of the document's plain values' JSON, which jsonWriter
		// writes as json.Marshal(tree.plain()) would.
		w := jsonWriter{}
		w.value(tree, 1)
		doc.Hash = hashWithWarnings(w.buf, warnings)
	}
	return doc, nil
}

// readIdentity fills in doc's kind, namespace and name, defaulting the last
// two.
func readIdentity(tree *yvalue, doc *Document, defaultName string) *FieldError {
	kind := tree.get("kind")
	switch {
	case kind == nil || kind.value.kind == yNull:
		return &FieldError{Line: doc.Line, Field: "kind", Msg: "required: must be MCPServer or Workflow"}
	case kind.value.kind != yString:
		return &FieldError{Line: kind.line, Field: "kind", Msg: "expected string, got " + kind.value.typeName()}
	case kind.value.str != KindMCPServer && kind.value.str != KindWorkflow:
		return &FieldError{Line: kind.line, Field: "kind", Msg: fmt.Sprintf("unsupported kind %q: must be MCPServer or Workflow", kind.value.str)}
	}
	doc.Kind = KindMCPServer // the constant, not the decoded copy: keys carry it
	if kind.value.str == KindWorkflow {
		doc.Kind = KindWorkflow
	}

	// Further checks of metadata's shape come with the other fields'.
	var name, namespace *yentry
	if meta := tree.get("metadata"); meta != nil && meta.value.kind == yMap {
		name, namespace = meta.value.get("name"), meta.value.get("namespace")
	}
	var ferr *FieldError
	if doc.Name, ferr = identityField(name, "metadata.name", defaultName, doc.Line, ValidName); ferr != nil {
		return ferr
	}
	if doc.Name == "" {
		return &FieldError{Line: doc.Line, Field: "metadata.name", Msg: "required in a file with more than one document"}
	}
	doc.Namespace, ferr = identityField(namespace, "metadata.namespace", events.DefaultNamespace, doc.Line, validNamespace)
	return ferr
}

// identityField reads metadata.name or metadata.namespace, which must be
// valid Kubernetes names: musterd keys resources and their status files by
// them.
func identityField(e *yentry, field, fallback string, docLine int, valid func(string) []string) (string, *FieldError) {
	if e == nil || e.value.kind == yNull {
		if msgs := valid(fallback); fallback != "" && len(msgs) > 0 {
			return "", &FieldError{Line: docLine, Field: field, Msg: fmt.Sprintf("not set, and the file name %q is no valid default: %s", fallback, strings.Join(msgs, "; "))}
		}
		return fallback, nil
	}
	if e.value.kind != yString {
		return "", &FieldError{Line: e.line, Field: field, Msg: "expected string, got " + e.value.typeName()}
	}
	s := e.value.str
	if msgs := valid(s); len(msgs) > 0 {
		return "", &FieldError{Line: e.line, Field: field, Msg: fmt.Sprintf("invalid value %q: %s", s, strings.Join(msgs, "; "))}
	}
	return s, nil
}

// decodeObject checks tree field by field against obj's type, decodes it
// into obj and validates the result, returning every problem found and
// the warnings about fields it ignored (settleUnknown).
func decodeObject(tree *yvalue, obj Object, doc Document) (errs, warnings FieldErrors) {
	if av := tree.get("apiVersion"); av == nil || !av.value.isString(APIVersion) {
		if av == nil {
			return FieldErrors{{Line: doc.Line, Field: "apiVersion", Msg: "required: must be " + APIVersion}}, nil
		}
		got, _ := json.Marshal(av.value.plain())
		return FieldErrors{{Line: av.line, Field: "apiVersion", Msg: fmt.Sprintf("unsupported value %s: must be %s", got, APIVersion)}}, nil
	}
	rv := reflect.ValueOf(obj).Elem()
	d := objectDecoders.Get().(*objectDecoder)
	defer d.release()
	d.decode(tree, rv, 1)
	if len(d.errs) > 0 {
		return settleUnknown(d.errs, d.unknown)
	}
	file := &documentFields{tree: tree, typ: rv.Type(), line: doc.Line, zero: d.zero}
	if d.tooDeep {
		if errs := jsonRoundTripErrors(tree, rv.Type(), file); len(errs) > 0 {
			return settleUnknown(errs, d.unknown)
		}
	}
	v := &validator{file: file}
	validateFileMetadata(v, obj)
	switch o := obj.(type) {
	case *MCPServer:
		o.validate(v)
	case *Workflow:
		o.validate(v)
	}
	return v.settle(d.unknown)
}

// jsonRoundTripErrors has encoding/json decode tree, as decodeObject once
// did, into a new value of type t, and reports what it objects to (a value
// nested deeper than it allows) as decodeObject did then.
func jsonRoundTripErrors(tree *yvalue, t reflect.Type, file *documentFields) FieldErrors {
	data, err := json.Marshal(checkedPlain(tree, t))
	if err == nil {
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.DisallowUnknownFields()
		err = dec.Decode(reflect.New(t).Interface())
	}
	if err == nil {
		return nil
	}
	return decodeFailure(err, file)
}

// decodeFailure reports what encoding/json objected to where it points.
func decodeFailure(err error, file *documentFields) FieldErrors {
	v := &validator{file: file}
	var typeErr *json.UnmarshalTypeError
	if errors.As(err, &typeErr) {
		v.fail(&fieldPath{s: typeErr.Field}, "cannot decode: %v", err)
	} else {
		v.fail(nil, "cannot decode: %v", err)
	}
	return v.errs
}

// documentFields tells validation which fields of a document its file
// sets, and on which lines. The decoder notes the fields set to zero values,
// which are all validation asks about while it finds no error
// (validator.has); the lines of all fields, needed only for errors, it
// finds by decoding the tree again when first asked.
type documentFields struct {
	tree    *yvalue
	typ     reflect.Type
	line    int            // the document's
	zero    []string       // paths of the fields set to zero values
	lineMap map[string]int // path of every field set → its line; "" → the document's
}

// setsZero reports whether the file sets field p to its zero value. (It
// may answer true, too, for a field set to another value; it is not asked
// about those.)
func (f *documentFields) setsZero(p *fieldPath) bool {
	if f.lineMap != nil {
		_, ok := f.lineMap[p.String()]
		return ok
	}
	return len(f.zero) > 0 && slices.Contains(f.zero, p.String())
}

func (f *documentFields) lines() map[string]int {
	if f.lineMap == nil {
		d := &objectDecoder{lines: map[string]int{"": f.line}}
		d.decode(f.tree, reflect.New(f.typ).Elem(), 1)
		f.lineMap = d.lines
	}
	return f.lineMap
}

// validateFileMetadata checks labels and annotations as an API server
// would, so a file musterd accepts is one Kubernetes accepts too.
func validateFileMetadata(v *validator, obj Object) {
	labels, annotations := obj.GetLabels(), obj.GetAnnotations()
	if len(labels) == 0 && len(annotations) == 0 {
		return // nothing to object to, nor to build field paths for
	}
	meta := field.NewPath("metadata")
	errs := metav1validation.ValidateLabels(labels, meta.Child("labels"))
	errs = append(errs, apivalidation.ValidateAnnotations(annotations, meta.Child("annotations"))...)
	// Kubernetes finds them in a map's random order: the same file must
	// give the same error every time.
	slices.SortStableFunc(errs, func(a, b *field.Error) int {
		return cmp.Or(strings.Compare(a.Field, b.Field), strings.Compare(a.ErrorBody(), b.ErrorBody()))
	})
	for _, e := range errs {
		v.fail(&fieldPath{s: e.Field}, "%s", e.ErrorBody())
	}
}

// rejectDuplicates fails every document of a resource declared more than
// once in the file: which one was meant is anyone's guess.
func rejectDuplicates(docs []Document) {
	if len(docs) < 2 {
		return
	}
	lines := map[events.Key][]int{}
	for _, d := range docs {
		lines[d.Key()] = append(lines[d.Key()], d.Line)
	}
	for i := range docs {
		d := &docs[i]
		if l := lines[d.Key()]; len(l) > 1 {
			var errs FieldErrors
			errors.As(d.Err, &errs)
			d.Object = nil
			d.Err = append(FieldErrors{{Line: d.Line, Msg: fmt.Sprintf("%s %s/%s is declared more than once in this file (lines %s)",
				d.Kind, d.Namespace, d.Name, strings.Join(lineList(l), ", "))}}, errs...)
		}
	}
}

func lineList(lines []int) []string {
	s := make([]string, len(lines))
	for i, l := range lines {
		s[i] = strconv.Itoa(l)
	}
	return s
}

// hashJSON hashes v's JSON encoding, which encoding/json makes canonical:
// struct fields in declaration order, map keys sorted, no whitespace.
// warnings, if any, follow it (hashWithWarnings).
func hashJSON(v any, warnings FieldErrors) string {
	data, err := json.Marshal(v)
	if err != nil {
		// Decoded documents hold only JSON-encodable values.
		panic(fmt.Sprintf("v1alpha1: hashing a document: %v", err))
	}
	return hashWithWarnings(data, warnings)
}

// hashBytes is the Document.Hash of a document whose JSON is data.
func hashBytes(data []byte) string {
	const prefix = "sha256:"
	sum := sha256.Sum256(data)
	var s [len(prefix) + 2*sha256.Size]byte
	copy(s[:], prefix)
	hex.Encode(s[len(prefix):], sum[:])
	return string(s[:])
}
