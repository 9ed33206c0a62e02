package v1alpha1

import (
	"bytes"
	"reflect"
	"strings"
	"sync"
)

// The plain-style fast path of decoding.
//
// Why: yaml.v3 turns text into tokens, events and then nodes, and buildTree
// turns the nodes into yvalues. For the short definition files musterd
// reads by the thousand at a cold start that is most of the start's CPU
// (yaml.v3 is most of a file's decoding time and of its garbage), and most
// of the decode on the path from a saved file to its reconcile. By this
// path a small workflow decodes several times faster, with a fraction of
// the garbage (BenchmarkDecodeFile measures both ways).
//
// What: nearly every definition file is written in the same few forms:
// block mappings and sequences, one-line scalars (plain, single- or
// double-quoted without escapes), flow lists and mappings of such scalars
// on one line, comments, and "---" between documents. fastParse reads
// exactly that and builds the yvalues directly, in one pass over the
// lines. Anything else (anchors, tags, block or multi-line scalars, nested
// flow collections, escapes, tabs, carriage returns, a plain scalar YAML
// might read as something other than a string, true, false, null or a
// decimal integer, a duplicate key, any mistake) makes it give up, and the
// file takes yaml.v3's path, unchanged. So the fast path never reports an
// error, and its trees are the trees yaml.v3 and buildTree make of the
// same text, line numbers included: yamlfast_test.go compares the two on
// the corpora and generated files the decoder is tested with, and fuzzes
// the comparison.

// parse parses data if it keeps to the forms above, returning a tree per
// non-empty document; ok is false otherwise. The trees live in p's arenas:
// they are good until p is released.
func (p *fastParser) parse(data []byte) (trees []*yvalue, ok bool) {
	if !fastText(data) {
		return nil, false
	}
	// The lines are read from one copy of the text; what the trees keep of
	// it (keys, values) is copied out of it exactly (leafKey,
	// strings.Clone), so that a decoded object holds its values and not
	// the file.
	text := string(data)
	flush := func() bool {
		if len(p.lines) == 0 {
			return true
		}
		var v yvalue
		if !p.block(p.lines[0].indent, &v) || p.i != len(p.lines) || v.kind != yMap {
			return false
		}
		trees = append(trees, &p.keepItems([]yvalue{v})[0])
		clear(p.lines)
		p.lines, p.i = p.lines[:0], 0
		return true
	}
	for num := 1; len(text) > 0; num++ {
		line := text
		if i := strings.IndexByte(text, '\n'); i >= 0 {
			line, text = text[:i], text[i+1:]
		} else {
			text = ""
		}
		indent := 0
		for indent < len(line) && line[indent] == ' ' {
			indent++
		}
		content := line[indent:]
		switch {
		case len(content) == 0 || content[0] == '#':
			continue // blank or a comment
		case indent == 0 && (content[0] == '%' || strings.HasPrefix(content, "...")):
			return nil, false // a directive or a document end
		case indent == 0 && strings.HasPrefix(content, "---"):
			if len(content) != 3 || !flush() {
				return nil, false
			}
			continue
		}
		p.lines = append(p.lines, fastLine{num: num, indent: indent, text: content})
	}
	if !flush() {
		return nil, false
	}
	return trees, true
}

// fastText reports whether data is free of what the fast path leaves to
// yaml.v3 wherever it appears: tabs, carriage returns, and the characters
// YAML reads as line breaks or a byte order mark (U+0085, U+2028, U+2029,
// U+FEFF).
func fastText(data []byte) bool {
	if bytes.IndexByte(data, '\t') >= 0 || bytes.IndexByte(data, '\r') >= 0 {
		return false
	}
	for _, special := range yamlBreaks {
		if bytes.Contains(data, special) {
			return false
		}
	}
	return true
}

// yamlBreaks are NEL, LS and PS, which YAML reads as line breaks, and the
// byte order mark, in UTF-8.
var yamlBreaks = [...][]byte{[]byte("\u0085"), []byte("\u2028"), []byte("\u2029"), []byte("\ufeff")}

// fastLine is a line of a document that is neither blank nor a comment.
type fastLine struct {
	num    int    // 1-based, in the file
	indent int    // leading spaces
	text   string // the rest
}

// fastParser reads the lines of one document at a time.
//
// A mapping's entries and a sequence's items are gathered on a stack
// shared by the collections being read, the innermost on top, and copied
// out at their exact number once the collection ends (growing each an
// entry at a time would allocate every collection several times over).
//
// They are copied into the parser's arenas, not into allocations of their
// own: a tree lives only until its file is decoded (DecodeFile), so an
// allocation per collection would be garbage at once (BenchmarkDecodeFile
// counts a decode's allocations).
//
// Parsers are pooled, stacks and arenas and all, so that a cold start's
// thousands of files reuse a few; a parser is cleared of the strings it
// read before it goes back, and one grown by a file of over
// fastPooledLines lines is left to the collector.
type fastParser struct {
	lines   []fastLine
	i       int // the next line to read
	entries []yentry
	items   []yvalue
	// the most entries and items the stacks held: what release clears
	entriesUsed, itemsUsed int
	// keptEntries and keptItems are the arenas holding the trees'
	// collections and roots, in use up to their lengths.
	keptEntries []yentry
	keptItems   []yvalue
}

const fastPooledLines = 1024

var fastParsers = sync.Pool{New: func() any { return new(fastParser) }}

// release clears p and puts it back in the pool. The trees it parsed must
// no longer be in use.
func (p *fastParser) release() {
	if cap(p.lines) > fastPooledLines || cap(p.keptEntries)+cap(p.keptItems) > 4*fastPooledLines {
		return
	}
	clear(p.lines)
	clear(p.entries[:p.entriesUsed])
	clear(p.items[:p.itemsUsed])
	clear(p.keptEntries)
	clear(p.keptItems)
	*p = fastParser{lines: p.lines[:0], entries: p.entries[:0], items: p.items[:0],
		keptEntries: p.keptEntries[:0], keptItems: p.keptItems[:0]}
	fastParsers.Put(p)
}

// keepEntries copies a collection's entries into the arena and returns the
// copy, whose capacity is its length, so that nothing appended to it
// reaches the arena. An arena that grows leaves the trees made so far in
// its old array, which they keep alive until they are dropped.
func (p *fastParser) keepEntries(entries []yentry) []yentry {
	at := len(p.keptEntries)
	p.keptEntries = append(p.keptEntries, entries...)
	return p.keptEntries[at:len(p.keptEntries):len(p.keptEntries)]
}

// keepItems is keepEntries for a sequence's items, or a document's root.
func (p *fastParser) keepItems(items []yvalue) []yvalue {
	at := len(p.keptItems)
	p.keptItems = append(p.keptItems, items...)
	return p.keptItems[at:len(p.keptItems):len(p.keptItems)]
}

// block reads into v the mapping or sequence starting at the next line,
// whose indentation must be indent.
func (p *fastParser) block(indent int, v *yvalue) bool {
	if p.i >= len(p.lines) || p.lines[p.i].indent != indent {
		return false
	}
	if isSeqItem(p.lines[p.i].text) {
		return p.sequence(indent, v)
	}
	return p.mapping(indent, v)
}

// isSeqItem reports whether text starts a block sequence's item.
func isSeqItem(text string) bool {
	return text == "-" || len(text) > 1 && text[0] == '-' && text[1] == ' '
}

// mapping reads into v the entries at indent, from the next line on.
func (p *fastParser) mapping(indent int, v *yvalue) bool {
	line, mark := p.lines[p.i].num, len(p.entries)
	defer func() { p.entries = p.entries[:mark] }()
	var mine []yentry // p.entries[mark:], for keys
	keys := keyLines{entries: &mine}
	for p.i < len(p.lines) {
		l := &p.lines[p.i]
		if l.indent < indent {
			break
		}
		if l.indent > indent || isSeqItem(l.text) {
			return false
		}
		key, rest, ok := fastKey(l.text)
		if !ok {
			return false
		}
		if _, dup := keys.lookup(key); dup {
			return false
		}
		p.entries = append(p.entries, yentry{key: leafKey(key), line: l.num})
		p.entriesUsed = max(p.entriesUsed, len(p.entries))
		mine = p.entries[mark:]
		keys.add()
		p.i++
		if rest != "" {
			if !fastScalarOrFlow(rest, l.num, &mine[len(mine)-1].value) {
				return false
			}
			continue
		}
		// The value is on the lines below: indented further, or a sequence
		// at the key's own indentation ("steps:\n- id: a").
		if p.i >= len(p.lines) {
			return false // null: left to yaml.v3
		}
		next := p.lines[p.i]
		if next.indent < indent || next.indent == indent && !isSeqItem(next.text) {
			return false // null: left to yaml.v3
		}
		var nested yvalue
		if !p.block(next.indent, &nested) {
			return false
		}
		// The stack may have moved while the nested block was read.
		mine = p.entries[mark:]
		mine[len(mine)-1].value = nested
	}
	*v = yvalue{kind: yMap, line: line, entries: p.keepEntries(mine)}
	return true
}

// sequence reads into v the items at indent, from the next line on.
func (p *fastParser) sequence(indent int, v *yvalue) bool {
	line, mark := p.lines[p.i].num, len(p.items)
	defer func() { p.items = p.items[:mark] }()
	for p.i < len(p.lines) {
		l := &p.lines[p.i]
		if l.indent != indent || !isSeqItem(l.text) {
			if l.indent > indent {
				return false
			}
			break
		}
		rest := strings.TrimLeft(l.text[1:], " ")
		var item yvalue
		switch {
		case rest == "" || rest[0] == '#':
			p.i++
			if p.i >= len(p.lines) || p.lines[p.i].indent <= indent {
				return false // null: left to yaml.v3
			}
			if !p.block(p.lines[p.i].indent, &item) {
				return false
			}
		case isSeqItem(rest):
			return false // "- - a"
		default:
			if _, _, isKey := fastKey(rest); isKey {
				// "- id: a": a mapping whose keys stand where id does. The
				// line is read again as that mapping's first.
				l.indent += len(l.text) - len(rest)
				l.text = rest
				if !p.mapping(l.indent, &item) {
					return false
				}
				break
			}
			if !fastScalarOrFlow(rest, l.num, &item) {
				return false
			}
			p.i++
		}
		p.items = append(p.items, item)
		p.itemsUsed = max(p.itemsUsed, len(p.items))
	}
	*v = yvalue{kind: ySeq, line: line, items: p.keepItems(p.items[mark:])}
	return true
}

// fastKey splits "key: rest" or "key:" into the key and the rest of the
// line (the value, or "" when the value is on the lines below). The key
// must be a plain scalar of letters, digits and "_-./" that begins with a
// letter or "_", is at most maxImplicitKey long, and is none of the words
// YAML reads as booleans or null.
func fastKey(text string) (key, rest string, ok bool) {
	if len(text) == 0 || !isLetter(text[0]) && text[0] != '_' {
		return "", "", false
	}
	i := 1
	for i < len(text) && isKeyChar(text[i]) {
		i++
	}
	if i == len(text) || text[i] != ':' || i+1 < len(text) && text[i+1] != ' ' {
		return "", "", false
	}
	key = text[:i]
	if len(key) > maxImplicitKey || yamlWord(key) {
		return "", "", false
	}
	rest = strings.TrimLeft(text[i+1:], " ")
	if len(rest) > 0 && rest[0] == '#' {
		rest = ""
	}
	return key, rest, true
}

// maxImplicitKey is the longest key YAML allows without "? ": 1024
// characters, which for the fast path's keys are bytes.
const maxImplicitKey = 1024

func isLetter(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }
func isKeyChar(c byte) bool {
	return isLetter(c) || c >= '0' && c <= '9' || c == '_' || c == '-' || c == '.' || c == '/'
}

// yamlWord reports whether s, in any case, is a word some YAML schema
// reads as a boolean or null: left to yaml.v3, whatever it makes of it.
func yamlWord(s string) bool {
	if len(s) > 5 {
		return false
	}
	var lower [5]byte
	for i := range len(s) {
		c := s[i]
		if c >= 'A' && c <= 'Z' {
			c += 'a' - 'A'
		}
		lower[i] = c
	}
	switch string(lower[:len(s)]) {
	case "true", "false", "null", "yes", "no", "on", "off", "y", "n":
		return true
	}
	return false
}

// fastScalarOrFlow reads the value that fills the rest of a line: a
// scalar, or a flow list or mapping of scalars, with an optional comment
// after it.
func fastScalarOrFlow(text string, line int, v *yvalue) bool {
	switch text[0] {
	case '"', '\'':
		s, rest, ok := fastQuoted(text)
		if !ok || !fastLineEnd(rest) {
			return false
		}
		*v = yvalue{kind: yString, line: line, str: strings.Clone(s)}
		return true
	case '[', '{':
		return fastFlow(text, line, v)
	}
	// A plain scalar ends at a comment (" #") or the line's end.
	s := text
	if i := strings.Index(s, " #"); i >= 0 {
		s = s[:i]
	}
	s = strings.TrimRight(s, " ")
	if len(s) == 0 || s[len(s)-1] == ':' || strings.Contains(s, ": ") {
		return false // a mapping where a scalar should be: left to yaml.v3
	}
	return fastPlain(s, line, v)
}

// fastPlain resolves a plain scalar as yaml.v3 and scalar do, for the
// spellings it knows: strings that begin with a letter, "_" or "/",
// true, false, null and decimal integers.
func fastPlain(s string, line int, v *yvalue) bool {
	switch s {
	case "true":
		*v = yvalue{kind: yBool, line: line, bits: 1}
		return true
	case "false":
		*v = yvalue{kind: yBool, line: line}
		return true
	case "null":
		*v = yvalue{kind: yNull, line: line}
		return true
	}
	if c := s[0]; isLetter(c) || c == '_' || c == '/' {
		if yamlWord(s) {
			return false
		}
		*v = yvalue{kind: yString, line: line, str: strings.Clone(s)}
		return true
	}
	if x, ok := plainDecimal(s); ok {
		*v = yvalue{kind: yInt, line: line, bits: uint64(x)}
		return true
	}
	return false
}

// fastQuoted reads the quoted scalar text starts with: double-quoted
// without escapes, or single-quoted (” for a quote). It returns the
// scalar's value and the text after its closing quote.
func fastQuoted(text string) (s, rest string, ok bool) {
	quote := text[0]
	if quote == '"' {
		for i := 1; i < len(text); i++ {
			switch text[i] {
			case '\\':
				return "", "", false
			case '"':
				return text[1:i], text[i+1:], true
			}
		}
		return "", "", false
	}
	for i := 1; i < len(text); i++ {
		if text[i] != '\'' {
			continue
		}
		if i+1 < len(text) && text[i+1] == '\'' {
			return "", "", false // an escaped quote: rare, left to yaml.v3
		}
		return text[1:i], text[i+1:], true
	}
	return "", "", false
}

// fastLineEnd reports whether what follows a value on its line is nothing
// but spaces and perhaps a comment after at least one of them.
func fastLineEnd(rest string) bool {
	trimmed := strings.TrimLeft(rest, " ")
	return trimmed == "" || trimmed[0] == '#' && len(trimmed) < len(rest)
}

// fastFlow reads a flow list or mapping of one-line scalars ("[a, 'b', 1]",
// "{a: x, b: "y"}", "[]", "{}") and what follows it on its line.
func fastFlow(text string, line int, v *yvalue) bool {
	closing := byte(']')
	var keys keyLines
	if text[0] == '{' {
		closing = '}'
		*v = yvalue{kind: yMap, line: line, entries: make([]yentry, 0, 4)}
		keys.entries = &v.entries
	} else {
		*v = yvalue{kind: ySeq, line: line, items: make([]yvalue, 0, 4)}
	}
	rest := strings.TrimLeft(text[1:], " ")
	if len(rest) > 0 && rest[0] == closing {
		return fastLineEnd(rest[1:])
	}
	for {
		if v.kind == yMap {
			key, after, ok := fastKey(rest)
			if !ok || after == "" {
				return false
			}
			if _, dup := keys.lookup(key); dup {
				return false
			}
			v.entries = append(v.entries, yentry{key: leafKey(key), line: line})
			keys.add()
			rest = after
		}
		var item yvalue
		switch {
		case len(rest) == 0:
			return false
		case rest[0] == '"' || rest[0] == '\'':
			s, after, ok := fastQuoted(rest)
			if !ok {
				return false
			}
			item, rest = yvalue{kind: yString, line: line, str: strings.Clone(s)}, after
		default:
			end := 0
			for end < len(rest) && isFlowPlainChar(rest[end]) {
				end++
			}
			s := strings.TrimRight(rest[:end], " ")
			if len(s) == 0 || !fastPlain(s, line, &item) {
				return false
			}
			rest = rest[end:]
		}
		if v.kind == yMap {
			v.entries[len(v.entries)-1].value = item
		} else {
			v.items = append(v.items, item)
		}
		rest = strings.TrimLeft(rest, " ")
		switch {
		case len(rest) == 0:
			return false
		case rest[0] == closing:
			return fastLineEnd(rest[1:])
		case rest[0] != ',':
			return false
		}
		if rest = strings.TrimLeft(rest[1:], " "); len(rest) > 0 && rest[0] == closing {
			return false // a trailing comma: left to yaml.v3
		}
	}
}

// isFlowPlainChar reports whether c may stand in a plain scalar of a flow
// collection as the fast path reads it: not an indicator of flow style, quoting,
// comments or mappings.
func isFlowPlainChar(c byte) bool {
	switch c {
	case ',', '[', ']', '{', '}', '#', ':', '"', '\'', '&', '*', '!', '|', '>', '%', '@', '`', '?':
		return false
	}
	return c >= ' '
}

// leafKey returns a copy of key, or the schema's own string for a field
// name: a key is kept beyond the decode only in a map (env, headers, a
// step's args), and most keys are field names, which need no copy.
func leafKey(key string) string {
	if name, ok := schemaFieldNames()[key]; ok {
		return name
	}
	return strings.Clone(key)
}

// schemaFieldNames holds the JSON names of the fields of MCPServer,
// Workflow and every type within them.
var schemaFieldNames = sync.OnceValue(func() map[string]string {
	names := map[string]string{}
	seen := map[reflect.Type]bool{}
	var walk func(t reflect.Type)
	walk = func(t reflect.Type) {
		for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice || t.Kind() == reflect.Map {
			t = t.Elem()
		}
		if t.Kind() != reflect.Struct || seen[t] {
			return
		}
		seen[t] = true
		for name, ft := range jsonFields(t) {
			names[name] = name
			walk(ft)
		}
	}
	walk(reflect.TypeFor[MCPServer]())
	walk(reflect.TypeFor[Workflow]())
	return names
})
