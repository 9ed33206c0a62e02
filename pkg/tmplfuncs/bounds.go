package tmplfuncs

import (
	"errors"
	"fmt"
	"html/template"
	"io"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	texttemplate "text/template"
	"text/template/parse"
)

// The bounds of a render. text/template has no deadline (it ignores the
// run's context), so a render is bounded by what it may produce instead.
const (
	// MaxBytes bounds a render's output and every string or byte slice a
	// function returns (or, for the generators, would build): 1 MiB.
	MaxBytes = 1 << 20
	// MaxItems bounds the elements of every list or map a function
	// returns, and what until, untilStep and seq generate: 10,000.
	MaxItems = 10_000
	// MaxIterations bounds the iterations of all range actions of one
	// render together (nested ranges count each inner iteration): 10,000.
	MaxIterations = 10_000
)

// ErrLimit is the cause of every error for a bound exceeded.
var ErrLimit = errors.New("template limit exceeded")

func limit(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrLimit}, args...)...)
}

// dropped are sprig's expensive functions (key generation, bcrypt, scrypt:
// seconds of CPU a call, unbounded by the run's deadline), which templates
// do not get.
var dropped = []string{"genPrivateKey", "genCA", "genCAWithKey", "genSelfSignedCert",
	"genSelfSignedCertWithKey", "genSignedCert", "genSignedCertWithKey", "bcrypt", "htpasswd",
	"derivePassword"}

// bound replaces the generators, whose result's size is one of their
// arguments, with versions that refuse a result beyond MaxBytes or
// MaxItems before building it, and adds the size check of every other
// function's result.
func bound(m texttemplate.FuncMap) {
	for _, name := range dropped {
		delete(m, name)
	}
	// The builtins that build strings, so that their results are checked
	// like sprig's.
	m["print"], m["printf"], m["println"] = fmt.Sprint, sprintf, fmt.Sprintln
	m["html"], m["js"], m["urlquery"] = template.HTMLEscaper, template.JSEscaper, template.URLQueryEscaper
	for name, f := range m {
		m[name] = checked(name, f)
	}
	pre := func(name string, check func(args []reflect.Value) error) {
		m[name] = prechecked(m[name], check)
	}
	pre("repeat", func(a []reflect.Value) error { return size(a[0].Int(), int64(a[1].Len())) })
	for _, name := range []string{"randAlphaNum", "randAlpha", "randAscii", "randNumeric", "randBytes"} {
		pre(name, func(a []reflect.Value) error { return size(a[0].Int(), 1) })
	}
	for _, name := range []string{"indent", "nindent"} {
		pre(name, func(a []reflect.Value) error {
			s := a[1].String()
			if err := size(a[0].Int(), int64(strings.Count(s, "\n")+2)); err != nil {
				return err
			}
			return size(1, int64(len(s)))
		})
	}
	pre("wrapWith", func(a []reflect.Value) error {
		s, breaks := a[2].String(), int64(len(a[2].String()))/max(a[0].Int(), 1)+1
		if err := size(breaks, int64(a[1].Len())); err != nil {
			return err
		}
		return size(1, int64(len(s))+breaks*int64(a[1].Len()))
	})
	pre("replace", func(a []reflect.Value) error {
		old, repl, s := a[0].String(), a[1].String(), a[2].String()
		return size(int64(strings.Count(s, old)), int64(len(repl)), int64(len(s)))
	})
	for _, name := range []string{"regexReplaceAll", "regexReplaceAllLiteral", "mustRegexReplaceAll", "mustRegexReplaceAllLiteral"} {
		pre(name, func(a []reflect.Value) error {
			re, err := regexp.Compile(a[0].String())
			if err != nil {
				return nil // the function reports it
			}
			s, repl := a[1].String(), int64(a[2].Len())
			// A replacement's references expand to at most the match.
			total := int64(len(s))
			for _, m := range re.FindAllStringIndex(s, -1) {
				total += repl * max(1, int64(m[1]-m[0]))
				if total > MaxBytes {
					return limit("result over %d bytes", MaxBytes)
				}
			}
			return nil
		})
	}
	pre("join", func(a []reflect.Value) error {
		v := reflect.ValueOf(a[1].Interface())
		if v.Kind() == reflect.Slice || v.Kind() == reflect.Array {
			return size(int64(v.Len()), int64(a[0].Len()))
		}
		return nil
	})
	m["until"] = func(n int) ([]int, error) {
		step := 1
		if n < 0 {
			step = -1
		}
		return untilStep(0, n, step)
	}
	m["untilStep"] = untilStep
	m["seq"] = seq
	m["set"] = prechecked(m["set"], func(a []reflect.Value) error { return noCycle(a[0], a[2]) })
	for _, name := range []string{"merge", "mergeOverwrite", "mustMerge", "mustMergeOverwrite"} {
		pre(name, func(a []reflect.Value) error {
			for _, src := range a[1:] {
				if err := noCycle(a[0], src); err != nil {
					return err
				}
			}
			return nil
		})
	}
}

// size reports an error when a result of n pieces of each bytes (plus
// extra) would exceed MaxBytes; a negative count is one too.
func size(n, each int64, extra ...int64) error {
	if n < 0 || each < 0 {
		return fmt.Errorf("negative count %d", min(n, each))
	}
	total := int64(0)
	for _, e := range extra {
		total += e
	}
	if each != 0 && n > (MaxBytes-total)/each {
		return limit("result over %d bytes", MaxBytes)
	}
	return nil
}

// untilStep is sprig's, bounded, and computed without the overflow of
// sprig's loop (untilStep near the largest int never ends there).
func untilStep(start, stop, step int) ([]int, error) {
	var n uint64
	switch {
	case step > 0 && stop > start:
		d := uint64(stop) - uint64(start)
		n = d / uint64(step)
		if d%uint64(step) != 0 {
			n++
		}
	case step < 0 && stop < start:
		d, s := uint64(start)-uint64(stop), uint64(-(step+1))+1
		n = d / s
		if d%s != 0 {
			n++
		}
	}
	if n > MaxItems {
		return nil, limit("more than %d items", MaxItems)
	}
	v := make([]int, n)
	for i := range v {
		v[i] = start + i*step
	}
	return v, nil
}

// seq is sprig's (bash's seq: [start [step]] end, inclusive), bounded.
func seq(params ...int) (string, error) {
	start, step, end := 1, 0, 0
	switch len(params) {
	case 1:
		end = params[0]
	case 2:
		start, end = params[0], params[1]
	case 3:
		start, step, end = params[0], params[1], params[2]
	default:
		return "", nil
	}
	inc := 1
	if end < start {
		inc = -1
		if step > 0 {
			return "", nil
		}
	}
	if step == 0 {
		step = inc
	}
	if end+inc < end != (inc < 0) { // end is at the edge of int
		end -= inc
	}
	v, err := untilStep(start, end+inc, step)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	for i, n := range v {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(strconv.Itoa(n))
	}
	return b.String(), nil
}

// sprintf is fmt.Sprintf, refused when the widths and precisions of its
// format (each at most 10^6 by fmt's own rule) could pass MaxBytes.
func sprintf(format string, args ...any) (string, error) {
	total := int64(len(format))
	for i := 0; i < len(format); i++ {
		if format[i] != '%' {
			continue
		}
		for i++; i < len(format) && strings.IndexByte("+-# 0.*[]123456789", format[i]) >= 0; i++ {
			switch c := format[i]; {
			case c == '*':
				total += 1_000_000
			case c >= '1' && c <= '9':
				j := i
				for j < len(format) && format[j] >= '0' && format[j] <= '9' {
					j++
				}
				n, _ := strconv.Atoi(format[i:min(j, i+7)])
				total += int64(min(n, 1_000_000))
				i = j - 1
			}
		}
		if total > MaxBytes {
			return "", limit("result over %d bytes", MaxBytes)
		}
	}
	return fmt.Sprintf(format, args...), nil
}

// noCycle refuses to put v into the map m when m is reachable from v: a
// map that holds itself sends fmt (which printing a value uses) into
// unbounded recursion, a stack overflow no recover catches.
func noCycle(m, v reflect.Value) error {
	for m.Kind() == reflect.Interface {
		m = m.Elem()
	}
	if m.Kind() != reflect.Map {
		return nil
	}
	target := m.UnsafePointer()
	seen := map[uintptr]bool{}
	var reaches func(v reflect.Value) bool
	reaches = func(v reflect.Value) bool {
		for v.Kind() == reflect.Interface || v.Kind() == reflect.Pointer {
			if v.IsNil() {
				return false
			}
			v = v.Elem()
		}
		switch v.Kind() {
		case reflect.Map:
			if v.IsNil() {
				return false
			}
			if v.UnsafePointer() == target {
				return true
			}
			p := uintptr(v.UnsafePointer())
			if seen[p] {
				return false
			}
			seen[p] = true
			for it := v.MapRange(); it.Next(); {
				if reaches(it.Value()) {
					return true
				}
			}
		case reflect.Slice, reflect.Array:
			for i := range v.Len() {
				if reaches(v.Index(i)) {
					return true
				}
			}
		}
		return false
	}
	if reaches(v) {
		return errors.New("a map cannot hold itself")
	}
	return nil
}

var errorType = reflect.TypeFor[error]()

// prechecked wraps f (already checked) so that check sees its arguments
// first and may refuse the call. check runs only when the arguments have
// the types f declares, so it may index them by position.
func prechecked(f any, check func([]reflect.Value) error) any {
	fv := reflect.ValueOf(f)
	t := fv.Type()
	if t.NumOut() != 2 || t.Out(1) != errorType {
		panic("tmplfuncs: prechecked wraps a checked function")
	}
	return reflect.MakeFunc(t, func(args []reflect.Value) []reflect.Value {
		if err := check(args); err != nil {
			return []reflect.Value{reflect.Zero(t.Out(0)), reflect.ValueOf(&err).Elem()}
		}
		if t.IsVariadic() {
			return fv.CallSlice(args)
		}
		return fv.Call(args)
	}).Interface()
}

// checked wraps f so that its result's size is checked, returning an
// error when it passes MaxBytes or MaxItems. A function without an error
// result gains one.
func checked(name string, f any) any {
	fv := reflect.ValueOf(f)
	t := fv.Type()
	if t.NumOut() == 0 || t.NumOut() > 2 {
		return f
	}
	in := make([]reflect.Type, t.NumIn())
	for i := range in {
		in[i] = t.In(i)
	}
	wt := reflect.FuncOf(in, []reflect.Type{t.Out(0), errorType}, t.IsVariadic())
	return reflect.MakeFunc(wt, func(args []reflect.Value) []reflect.Value {
		var out []reflect.Value
		if t.IsVariadic() {
			out = fv.CallSlice(args)
		} else {
			out = fv.Call(args)
		}
		errv := reflect.Zero(errorType)
		if len(out) == 2 {
			errv = out[1]
		}
		if errv.IsNil() {
			if err := tooLarge(out[0]); err != nil {
				return []reflect.Value{reflect.Zero(t.Out(0)), reflect.ValueOf(&err).Elem()}
			}
		}
		return []reflect.Value{out[0], errv}
	}).Interface()
}

// tooLarge reports a result past MaxBytes (strings, bytes) or MaxItems
// (lists, maps).
func tooLarge(v reflect.Value) error {
	for v.Kind() == reflect.Interface {
		if v.IsNil() {
			return nil
		}
		v = v.Elem()
	}
	switch {
	case v.Kind() == reflect.String, v.Kind() == reflect.Slice && v.Type().Elem().Kind() == reflect.Uint8:
		if v.Len() > MaxBytes {
			return limit("result over %d bytes", MaxBytes)
		}
	case v.Kind() == reflect.Slice, v.Kind() == reflect.Array, v.Kind() == reflect.Map:
		if v.Len() > MaxItems {
			return limit("more than %d items", MaxItems)
		}
	}
	return nil
}

// Parse parses text as a template with Funcs, named "t". It refuses
// {{define}}, {{template}} and {{block}}: a template that calls itself
// recurses exponentially past every other bound.
func Parse(text string) (*texttemplate.Template, error) {
	tmpl, err := texttemplate.New("t").Funcs(funcs).Option("missingkey=error").Parse(text)
	if err != nil {
		return nil, err
	}
	if len(tmpl.Templates()) > 1 {
		return nil, errors.New("template: t:1: {{define}} and {{block}} are not supported")
	}
	var bad error
	walk(tmpl.Root, func(n parse.Node) {
		if tn, ok := n.(*parse.TemplateNode); ok && bad == nil {
			loc, _ := tmpl.ErrorContext(tn)
			bad = fmt.Errorf("template: %s: {{template}} is not supported", loc)
		}
	}, nil)
	if bad != nil {
		return nil, bad
	}
	return tmpl, nil
}

// rangeFunc is the function Execute appends to every range's pipeline to
// count its iterations.
const rangeFunc = "rangeLimit"

// Execute runs tmpl (from Parse, executed once) against data into w,
// bounded: more than MaxBytes of output, or more than MaxIterations of
// range iterations, is an error wrapping ErrLimit.
func Execute(tmpl *texttemplate.Template, w io.Writer, data any) error {
	iterations := 0
	walk(tmpl.Root, nil, func(r *parse.RangeNode) {
		r.Pipe.Cmds = append(r.Pipe.Cmds, &parse.CommandNode{NodeType: parse.NodeCommand,
			Args: []parse.Node{parse.NewIdentifier(rangeFunc).SetTree(tmpl.Tree).SetPos(r.Pipe.Pos)}})
	})
	tmpl.Funcs(texttemplate.FuncMap{rangeFunc: func(v any) (any, error) {
		rv := reflect.ValueOf(v)
		n := 0
		switch rv.Kind() {
		case reflect.Slice, reflect.Array, reflect.Map, reflect.Chan:
			n = rv.Len()
		case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
			n = int(min(max(rv.Int(), 0), MaxIterations+1))
		case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
			n = int(min(rv.Uint(), MaxIterations+1))
		case reflect.Func:
			return nil, errors.New("cannot range over a function")
		}
		if iterations += n; iterations > MaxIterations {
			return nil, limit("more than %d range iterations", MaxIterations)
		}
		return v, nil
	}})
	return tmpl.Execute(&limitedWriter{w: w, left: MaxBytes}, data)
}

// walk calls visit on every node under n and ranges on every range node.
func walk(n parse.Node, visit func(parse.Node), ranges func(*parse.RangeNode)) {
	if n == nil || reflect.ValueOf(n).IsNil() {
		return
	}
	if visit != nil {
		visit(n)
	}
	switch n := n.(type) {
	case *parse.ListNode:
		for _, c := range n.Nodes {
			walk(c, visit, ranges)
		}
	case *parse.IfNode:
		walk(n.List, visit, ranges)
		walk(n.ElseList, visit, ranges)
	case *parse.WithNode:
		walk(n.List, visit, ranges)
		walk(n.ElseList, visit, ranges)
	case *parse.RangeNode:
		if ranges != nil {
			ranges(n)
		}
		walk(n.List, visit, ranges)
		walk(n.ElseList, visit, ranges)
	}
}

// limitedWriter passes at most left bytes to w and fails the write that
// would pass them.
type limitedWriter struct {
	w    io.Writer
	left int
}

func (l *limitedWriter) Write(p []byte) (int, error) {
	if len(p) > l.left {
		return 0, limit("output over %d bytes", MaxBytes)
	}
	l.left -= len(p)
	return l.w.Write(p)
}
