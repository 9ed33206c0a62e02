package files

import (
	"bytes"
	"regexp"
)

// A status file's YAML, written straight from its JSON.
//
// Why: through the YAML library (the JSON parsed as a YAML node tree,
// then that tree emitted), a status costs tens of times more CPU and
// garbage than writing it directly; with many resources that is a
// noticeable share of a cold start's CPU, and the garbage keeps the
// collector's goal up while the writes trail the start.
//
// How: the common statuses (maps of plain names to short ASCII text,
// numbers, booleans, timestamps) are written here, exactly as the library
// writes them; blockYAML reports false for anything else (escapes,
// non-ASCII, a line long enough for the library to fold, text starting
// with a digit or a sign), and encode then takes the library's way. A test
// holds the two to the same bytes.

// maxLine is the longest line written here: the library folds a scalar at
// a space once the line passes 80 columns.
const maxLine = 80

// timestamp is what encoding/json writes for a time.Time, which YAML reads
// as a timestamp and the library therefore double-quotes.
var timestamp = regexp.MustCompile(`^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]+)?(Z|[+-][0-9]{2}:[0-9]{2})$`)

// emitter writes one JSON value as block YAML, indented by 4 as the
// library does. ok turns false at the first thing it does not write as the
// library would.
type emitter struct {
	in  []byte
	pos int
	out bytes.Buffer
	ok  bool
}

// blockYAML returns raw, a JSON object, as the YAML the library writes for
// it, and whether it could.
func blockYAML(raw []byte) ([]byte, bool) {
	e := &emitter{in: raw, ok: true}
	e.out.Grow(len(raw) + len(raw)/2)
	if e.peek() != '{' {
		return nil, false
	}
	e.mapping(0, 4, false)
	if !e.ok || e.pos != len(e.in) {
		return nil, false
	}
	return e.out.Bytes(), true
}

func (e *emitter) peek() byte {
	if e.pos < len(e.in) {
		return e.in[e.pos]
	}
	e.ok = false
	return 0
}

// empty reports whether the object or array at pos is empty, and if so
// skips it.
func (e *emitter) empty() bool {
	if e.pos+1 < len(e.in) && (e.in[e.pos+1] == '}' || e.in[e.pos+1] == ']') {
		e.pos += 2
		return true
	}
	return false
}

// mapping writes the object at pos, its keys at indent and the blocks of
// their values at inner; inItem: the first key follows a sequence's "- "
// already written. The library writes an item's keys two columns after the
// dash and their blocks four after it.
func (e *emitter) mapping(indent, inner int, inItem bool) {
	e.pos++ // {
	for first := true; e.ok; first = false {
		if e.peek() == '}' {
			e.pos++
			return
		}
		if !first {
			e.pos++ // ,
		}
		key, ok := e.str()
		if !ok || !plainKey(key) {
			e.ok = false
			return
		}
		if !(first && inItem) {
			e.spaces(indent)
		}
		e.out.Write(key)
		e.out.WriteByte(':')
		e.pos++ // :
		e.value(inner, indent+len(key)+1)
	}
}

// sequence writes the array at pos, its items at indent.
func (e *emitter) sequence(indent int) {
	e.pos++ // [
	for first := true; e.ok; first = false {
		if e.peek() == ']' {
			e.pos++
			return
		}
		if !first {
			e.pos++ // ,
		}
		e.spaces(indent)
		e.out.WriteString("- ")
		switch e.peek() {
		case '{':
			if e.empty() {
				e.ok = false // the library writes "- {}"; not worth the case
				return
			}
			e.mapping(indent+2, indent+4, true)
		case '[':
			e.ok = false // a sequence in a sequence: "- - x"
			return
		default:
			e.scalar(indent + 2)
			e.out.WriteByte('\n')
		}
	}
}

// value writes the value of a key, a block at inner, the line being col
// long so far.
func (e *emitter) value(inner, col int) {
	switch e.peek() {
	case '{':
		if e.empty() {
			e.out.WriteString(" {}\n")
			return
		}
		e.out.WriteByte('\n')
		e.mapping(inner, inner+4, false)
	case '[':
		if e.empty() {
			e.out.WriteString(" []\n")
			return
		}
		e.out.WriteByte('\n')
		e.sequence(inner)
	default:
		e.out.WriteByte(' ')
		e.scalar(col + 1)
		e.out.WriteByte('\n')
	}
}

// scalar writes the string, number, boolean or null at pos, on a line col
// long so far.
func (e *emitter) scalar(col int) {
	if e.peek() != '"' {
		start := e.pos
		for e.pos < len(e.in) && !bytes.ContainsRune([]byte(",}] \n"), rune(e.in[e.pos])) {
			e.pos++
		}
		e.out.Write(e.in[start:e.pos]) // a number, true, false or null: plain
		return
	}
	s, ok := e.str()
	switch {
	case !ok || len(s) == 0 || col+len(s)+2 > maxLine:
		e.ok = false
	case isLetter(s[0]) && resolvesToBoolOrNull(s), timestamp.Match(s):
		e.out.WriteByte('"')
		e.out.Write(s)
		e.out.WriteByte('"')
	case !isLetter(s[0]) && !digitsAndLetters(s), s[len(s)-1] == ' ':
		e.ok = false
	case blockIndicator(s):
		if bytes.IndexByte(s, '\'') >= 0 {
			e.ok = false
			return
		}
		e.out.WriteByte('\'')
		e.out.Write(s)
		e.out.WriteByte('\'')
	default:
		e.out.Write(s)
	}
}

// str reads the JSON string at pos, which must hold only printable ASCII
// and no escape.
func (e *emitter) str() ([]byte, bool) {
	if e.peek() != '"' {
		return nil, false
	}
	start := e.pos + 1
	for i := start; i < len(e.in); i++ {
		switch c := e.in[i]; {
		case c == '"':
			e.pos = i + 1
			return e.in[start:i], true
		case c == '\\' || c < 0x20 || c > 0x7e:
			return nil, false
		}
	}
	return nil, false
}

func (e *emitter) spaces(n int) {
	for range n {
		e.out.WriteByte(' ')
	}
}

func isLetter(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }

// digitsAndLetters: s starts with a digit, as a correlation ID may, and is
// surely a string to YAML, so written plain: only digits and letters, with
// a letter that no number has (not e or E, which a float has; and no 0x,
// 0o or 0b prefix). A timestamp or a number needs a sign, a point, a colon,
// a dash or those letters.
func digitsAndLetters(s []byte) bool {
	if s[0] < '0' || s[0] > '9' || s[0] == '0' && len(s) > 1 && bytes.IndexByte([]byte("xXoObB"), s[1]) >= 0 {
		return false
	}
	other := false
	for _, c := range s {
		switch {
		case c >= '0' && c <= '9', c == 'e', c == 'E':
		case isLetter(c):
			other = true
		default:
			return false
		}
	}
	return other
}

// plainKey: a key the library writes plain, as a simple key.
func plainKey(k []byte) bool {
	if len(k) == 0 || len(k) > 64 || !isLetter(k[0]) || resolvesToBoolOrNull(k) {
		return false
	}
	for _, c := range k {
		if !isLetter(c) && !(c >= '0' && c <= '9') && c != '_' && c != '-' && c != '.' {
			return false
		}
	}
	return true
}

// resolvesToBoolOrNull: the words starting with a letter that YAML reads
// as other than a string, which the library double-quotes.
func resolvesToBoolOrNull(s []byte) bool {
	switch string(s) {
	case "true", "True", "TRUE", "false", "False", "FALSE", "null", "Null", "NULL":
		return true
	}
	return false
}

// blockIndicator reports whether s, printable ASCII starting with a
// letter, holds what stops the library writing it plain in a block: a ':'
// before a space or at the end, or a '#' after a space. It then writes it
// single-quoted.
func blockIndicator(s []byte) bool {
	for i, c := range s {
		switch {
		case c == ':' && (i+1 == len(s) || s[i+1] == ' '):
			return true
		case c == '#' && s[i-1] == ' ':
			return true
		}
	}
	return false
}
