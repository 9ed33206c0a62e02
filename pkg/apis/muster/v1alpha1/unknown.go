package v1alpha1

import (
	"strconv"
	"strings"
)

// A field the Go types do not have is, in a definition file, mostly one
// muster's own loader ignores: files written for muster (and muster's test
// harness) carry fields such as spec.input_schema or spec.required that
// muster reads past. Refusing them would refuse those files, so such a
// field is a warning, and the document is used without it. A misspelt
// field that matters is different: the field meant is then missing or
// wrong, and ignoring the misspelling would leave the user with a
// validation error that does not say why. An unknown field is therefore an
// error only when both hold: it is close to a known field (the did-you-mean
// suggestion), and a problem stands where that field belongs.

// unknownField is a field of a document that its type does not have.
type unknownField struct {
	line      int
	field     string // its path, as FieldError.Field spells it
	parent    string // the path of the object it is in; "" for the document
	suggested string // the known field of that object it likely misspells; "" if none is close
}

// unknownFieldMsg is the message of a warning about an ignored field;
// [FieldErrors.Refused] turns it into the error of a strict reader.
const (
	unknownFieldMsg  = "unknown field"
	ignoredSuffix    = ", ignored"
	didYouMeanPrefix = " (did you mean "
)

func didYouMean(suggested string) string {
	if suggested == "" {
		return ""
	}
	return didYouMeanPrefix + strconv.Quote(suggested) + "?)"
}

// settleUnknown splits a document's unknown fields into the errors of
// likely typos that matter, added to errs, and warnings about fields
// ignored. errs are the document's other problems, which decide what is a
// typo that matters.
func settleUnknown(errs FieldErrors, unknown []unknownField) (FieldErrors, FieldErrors) {
	if len(unknown) == 0 {
		return errs, nil
	}
	var typos, warnings FieldErrors
	for _, u := range unknown {
		if u.suggested != "" && problemWhere(errs, u) {
			typos = append(typos, &FieldError{Line: u.line, Field: u.field, Msg: unknownFieldMsg + didYouMean(u.suggested)})
			continue
		}
		warnings = append(warnings, &FieldError{Line: u.line, Field: u.field, Msg: unknownFieldMsg + ignoredSuffix + didYouMean(u.suggested)})
	}
	warnings.sort()
	return append(errs, typos...), warnings
}

// problemWhere reports whether one of errs stands where u's suggested
// field belongs: on that field or inside it, or on u's object in words
// that name the field ("exactly one of tool, forEach, or parallel must be
// set, got none").
func problemWhere(errs FieldErrors, u unknownField) bool {
	target := u.suggested
	if u.parent != "" {
		target = u.parent + "." + u.suggested
	}
	for _, e := range errs {
		switch {
		case e.Field == target,
			strings.HasPrefix(e.Field, target) && (e.Field[len(target)] == '.' || e.Field[len(target)] == '['),
			e.Field == u.parent && namesWord(e.Msg, u.suggested):
			return true
		}
	}
	return false
}

// namesWord reports whether msg holds word as a whole word: not as part
// of a longer name ("expect" is not in "expectNot").
func namesWord(msg, word string) bool {
	for i := 0; ; {
		j := strings.Index(msg[i:], word)
		if j < 0 {
			return false
		}
		start, end := i+j, i+j+len(word)
		if (start == 0 || !nameChar(msg[start-1])) && (end == len(msg) || !nameChar(msg[end])) {
			return true
		}
		i = start + 1
	}
}

func nameChar(c byte) bool {
	return c == '_' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

// hashWithWarnings is the Document.Hash of a document whose JSON is data
// and whose warnings are warnings: a change of the warnings is a change
// of the document, so that what shows them is told. JSON as
// json.Marshal writes it holds no newline, so the warnings appended after
// one cannot be mistaken for another document's JSON.
func hashWithWarnings(data []byte, warnings FieldErrors) string {
	if len(warnings) == 0 {
		return hashBytes(data)
	}
	buf := append(make([]byte, 0, len(data)+64*len(warnings)), data...)
	for _, w := range warnings {
		buf = append(buf, '\n')
		buf = strconv.AppendInt(buf, int64(w.Line), 10)
		buf = append(buf, ':')
		buf = append(buf, w.Field...)
		buf = append(buf, ": "...)
		buf = append(buf, w.Msg...)
	}
	return hashBytes(buf)
}

// Refused returns warnings, a document's (Document.Warnings), as the
// errors a strict reader makes of them: "spec.foo: unknown field" where
// the warning read "spec.foo: unknown field, ignored". Definitions
// declared through musterd's tools are read strictly, as muster reads
// them; files are not.
func (es FieldErrors) Refused() FieldErrors {
	out := make(FieldErrors, len(es))
	for i, e := range es {
		c := *e
		c.Msg = strings.Replace(c.Msg, ignoredSuffix, "", 1)
		out[i] = &c
	}
	return out
}

// Strings returns es as the lines of their Error, nil when es is empty:
// status and the index keep warnings as text.
func (es FieldErrors) Strings() []string {
	if len(es) == 0 {
		return nil
	}
	out := make([]string, len(es))
	for i, e := range es {
		out[i] = e.Error()
	}
	return out
}
