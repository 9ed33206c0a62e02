package catalogue

import (
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.yaml.in/yaml/v3"
)

// ExposureAnnotation is the MCPServer annotation that holds its exposure
// policy (ParseExposure): which of its tools, prompts and resources are
// exposed, under which names and descriptions. An annotation rather than a
// field of the spec: muster's definitions stay valid as they are (muster
// ignores annotations), the API server keeps it with or without musterd's
// CRDs, and it is no part of the spec, so a change of it restarts nothing.
const ExposureAnnotation = "musterd.io/exposure"

// Exposure is one server's exposure policy. The zero value (and nil)
// exposes everything under muster's names.
type Exposure struct {
	// Prefix is what the server's exposed names begin with: nil for
	// muster's rule ({global prefix}_{toolPrefix or server}_{tool}), ""
	// for none (the tool's own name), else Prefix + "_" + the name.
	Prefix *string
	// Tools filters the server's tools, by their own names.
	Tools Filter
	// Overrides are per tool, by its own name: a new name, description
	// or annotations.
	Overrides map[string]ToolOverride
	// Prompts filters its prompts by their own names, Resources its
	// resources and resource templates by their own URIs (or URI
	// templates).
	Prompts   Filter
	Resources Filter

	// source is the text ParseExposure read, by which two policies are
	// told the same.
	source string
}

// same reports whether p and q are one policy: the same, or read from
// the same text.
func (p *Exposure) same(q *Exposure) bool {
	if p == q {
		return true
	}
	return p != nil && q != nil && p.source != "" && p.source == q.source
}

// Filter keeps what an include glob matches (everything, when Include is
// empty) and no exclude glob matches.
type Filter struct {
	Include []Glob
	Exclude []Glob
}

// ToolOverride changes how one tool is exposed. Empty fields change
// nothing.
type ToolOverride struct {
	// Name replaces the tool's own name; the prefix still applies.
	Name        string
	Description *string
	Annotations Annotations
}

// Annotations set (non-nil) or leave (nil) each of a tool's annotations.
type Annotations struct {
	Title           *string
	ReadOnlyHint    *bool
	DestructiveHint *bool
	IdempotentHint  *bool
	OpenWorldHint   *bool
}

func (a Annotations) empty() bool { return a == Annotations{} }

// Glob is a shell pattern: * matches any run of characters (slashes
// included), ? any one character, [abc], [a-z] and [!a-z] a class;
// anything else itself. It matches the whole name.
type Glob struct {
	Pattern string
	re      *regexp.Regexp
}

// Match reports whether g matches s.
func (g Glob) Match(s string) bool { return g.re != nil && g.re.MatchString(s) }

// ParseGlob compiles pattern, or says where it does not parse.
func ParseGlob(pattern string) (Glob, error) {
	if pattern == "" {
		return Glob{}, errors.New("empty pattern")
	}
	var b strings.Builder
	b.WriteString("^")
	for i := 0; i < len(pattern); i++ {
		switch ch := pattern[i]; ch {
		case '*':
			b.WriteString(".*")
		case '?':
			b.WriteString(".")
		case '[':
			end := strings.IndexByte(pattern[i+1:], ']')
			if end == 0 && i+2 < len(pattern) { // "[]…]": a class holding ']'
				end = strings.IndexByte(pattern[i+2:], ']') + 1
				if end == 0 {
					end = -1
				}
			}
			if end < 0 {
				return Glob{}, fmt.Errorf("pattern %q: unterminated character class at offset %d", pattern, i)
			}
			class := pattern[i+1 : i+1+end]
			if class == "" || class == "!" {
				return Glob{}, fmt.Errorf("pattern %q: empty character class at offset %d", pattern, i)
			}
			b.WriteString("[")
			if class[0] == '!' {
				b.WriteString("^")
				class = class[1:]
			}
			b.WriteString(strings.ReplaceAll(strings.ReplaceAll(class, `\`, `\\`), "[", `\[`))
			b.WriteString("]")
			i += end + 1
		case ']':
			return Glob{}, fmt.Errorf("pattern %q: unmatched ']' at offset %d", pattern, i)
		default:
			b.WriteString(regexp.QuoteMeta(string(ch)))
		}
	}
	b.WriteString("$")
	re, err := regexp.Compile(b.String())
	if err != nil {
		return Glob{}, fmt.Errorf("pattern %q: %w", pattern, err)
	}
	return Glob{Pattern: pattern, re: re}, nil
}

// Keeps reports whether f keeps name.
func (f Filter) Keeps(name string) bool {
	if len(f.Include) > 0 && !slices.ContainsFunc(f.Include, func(g Glob) bool { return g.Match(name) }) {
		return false
	}
	return !slices.ContainsFunc(f.Exclude, func(g Glob) bool { return g.Match(name) })
}

// why says which of f's globs leaves name out, as the field that does:
// "tools.exclude[0] \"*delete*\"" or "tools.include (no pattern matches)".
func (f Filter) why(field, name string) string {
	if i := slices.IndexFunc(f.Exclude, func(g Glob) bool { return g.Match(name) }); i >= 0 {
		return fmt.Sprintf("%s.exclude[%d] %q", field, i, f.Exclude[i].Pattern)
	}
	return field + ".include (no pattern matches)"
}

// empty reports whether f keeps everything.
func (f Filter) empty() bool { return len(f.Include) == 0 && len(f.Exclude) == 0 }

// Keeps reports whether p exposes the server's tool name (p may be nil).
func (p *Exposure) KeepsTool(name string) bool { return p == nil || p.Tools.Keeps(name) }

// KeepsPrompt reports whether p exposes the server's prompt name.
func (p *Exposure) KeepsPrompt(name string) bool { return p == nil || p.Prompts.Keeps(name) }

// KeepsResource reports whether p exposes the server's resource (or
// resource template) uri.
func (p *Exposure) KeepsResource(uri string) bool { return p == nil || p.Resources.Keeps(uri) }

// Filters reports whether p leaves out or renames anything.
func (p *Exposure) Filters() bool {
	return p != nil && (!p.Tools.empty() || !p.Prompts.empty() || !p.Resources.empty())
}

// ownName is the name tool is exposed under before the prefix: its
// override's, or its own.
func (p *Exposure) ownName(tool string) string {
	if p != nil {
		if o, ok := p.Overrides[tool]; ok && o.Name != "" {
			return o.Name
		}
	}
	return tool
}

// apply returns t as p exposes it (its own name kept): t itself when p
// overrides neither its description nor its annotations, else a copy.
func (p *Exposure) apply(t *mcp.Tool) *mcp.Tool {
	if p == nil {
		return t
	}
	o, ok := p.Overrides[t.Name]
	if !ok || o.Description == nil && o.Annotations.empty() {
		return t
	}
	out := *t
	if o.Description != nil {
		out.Description = *o.Description
	}
	if !o.Annotations.empty() {
		var a mcp.ToolAnnotations
		if t.Annotations != nil {
			a = *t.Annotations
		}
		if v := o.Annotations.Title; v != nil {
			a.Title = *v
		}
		if v := o.Annotations.ReadOnlyHint; v != nil {
			a.ReadOnlyHint = *v
		}
		if v := o.Annotations.DestructiveHint; v != nil {
			a.DestructiveHint = new(*v)
		}
		if v := o.Annotations.IdempotentHint; v != nil {
			a.IdempotentHint = *v
		}
		if v := o.Annotations.OpenWorldHint; v != nil {
			a.OpenWorldHint = new(*v)
		}
		out.Annotations = &a
	}
	return &out
}

// ExposureError is a policy that does not parse or does not fit the
// server's tools: Field names the place in the policy ("tools.include[1]",
// "tools.overrides.get-sum.name").
type ExposureError struct {
	Field string
	Err   error
}

func (e *ExposureError) Error() string {
	if e.Field == "" {
		return e.Err.Error()
	}
	return e.Field + ": " + e.Err.Error()
}

func (e *ExposureError) Unwrap() error { return e.Err }

func fieldErr(field string, format string, args ...any) error {
	return &ExposureError{Field: field, Err: fmt.Errorf(format, args...)}
}

// toolName is MCP's rule for a tool's name: 1 to 128 characters, each a
// letter, a digit, '_', '-' or '.'.
var toolName = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,128}$`)

// ValidToolName reports why name breaks MCP's rule for tool names, or nil.
func ValidToolName(name string) error {
	if !toolName.MatchString(name) {
		return fmt.Errorf("%q is not a valid MCP tool name: 1 to 128 letters, digits, '_', '-' or '.'", name)
	}
	return nil
}

// ParseExposure reads an exposure policy, the value of ExposureAnnotation:
// YAML (or JSON) of the form
//
//	prefix: ""                  # absent: muster's rule; "": none; else the prefix
//	tools:
//	  include: [get-sum, "echo*"]
//	  exclude: ["*delete*"]
//	  overrides:
//	    get-sum:
//	      name: add
//	      description: Adds two numbers.
//	      annotations: {destructiveHint: false, readOnlyHint: true}
//	prompts:   {include: [...], exclude: [...]}
//	resources: {include: [...], exclude: [...]}
//
// An empty value is no policy (nil). Every error is an *ExposureError
// naming its field; an unknown field is an error, so that a typo never
// leaves a tool exposed unnoticed.
func ParseExposure(value string) (*Exposure, error) {
	if strings.TrimSpace(value) == "" {
		return nil, nil
	}
	var doc any
	if err := yaml.Unmarshal([]byte(value), &doc); err != nil {
		return nil, &ExposureError{Err: fmt.Errorf("not YAML: %w", err)}
	}
	if doc == nil {
		return nil, nil
	}
	top, err := object("", doc, "prefix", "tools", "prompts", "resources")
	if err != nil {
		return nil, err
	}
	p := &Exposure{source: value}
	if v, ok := top["prefix"]; ok {
		s, err := str("prefix", v)
		if err != nil {
			return nil, err
		}
		if s != "" {
			if err := ValidToolName(s); err != nil {
				return nil, fieldErr("prefix", "%w", err)
			}
		}
		p.Prefix = &s
	}
	if v, ok := top["tools"]; ok {
		tools, err := object("tools", v, "include", "exclude", "overrides")
		if err != nil {
			return nil, err
		}
		if p.Tools, err = filter("tools", tools); err != nil {
			return nil, err
		}
		if p.Overrides, err = overrides(tools["overrides"]); err != nil {
			return nil, err
		}
	}
	for _, f := range []struct {
		field string
		dst   *Filter
	}{{"prompts", &p.Prompts}, {"resources", &p.Resources}} {
		v, ok := top[f.field]
		if !ok {
			continue
		}
		m, err := object(f.field, v, "include", "exclude")
		if err != nil {
			return nil, err
		}
		if *f.dst, err = filter(f.field, m); err != nil {
			return nil, err
		}
	}
	return p, nil
}

func overrides(v any) (map[string]ToolOverride, error) {
	if v == nil {
		return nil, nil
	}
	m, err := object("tools.overrides", v)
	if err != nil {
		return nil, err
	}
	out := make(map[string]ToolOverride, len(m))
	renamedFrom := map[string]string{}
	for _, tool := range slices.Sorted(maps.Keys(m)) {
		field := "tools.overrides." + tool
		o, err := object(field, m[tool], "name", "description", "annotations")
		if err != nil {
			return nil, err
		}
		var ov ToolOverride
		if n, ok := o["name"]; ok {
			if ov.Name, err = str(field+".name", n); err != nil {
				return nil, err
			}
			if err := ValidToolName(ov.Name); err != nil {
				return nil, fieldErr(field+".name", "%w", err)
			}
			if other, dup := renamedFrom[ov.Name]; dup {
				return nil, fieldErr(field+".name", "%q is also the new name of tool %s: two tools cannot share a name", ov.Name, other)
			}
			renamedFrom[ov.Name] = tool
		}
		if d, ok := o["description"]; ok {
			s, err := str(field+".description", d)
			if err != nil {
				return nil, err
			}
			ov.Description = &s
		}
		if a, ok := o["annotations"]; ok {
			if ov.Annotations, err = annotations(field+".annotations", a); err != nil {
				return nil, err
			}
		}
		out[tool] = ov
	}
	return out, nil
}

func annotations(field string, v any) (Annotations, error) {
	m, err := object(field, v, "title", "readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint")
	if err != nil {
		return Annotations{}, err
	}
	var a Annotations
	if t, ok := m["title"]; ok {
		s, err := str(field+".title", t)
		if err != nil {
			return Annotations{}, err
		}
		a.Title = &s
	}
	for name, dst := range map[string]**bool{"readOnlyHint": &a.ReadOnlyHint, "destructiveHint": &a.DestructiveHint,
		"idempotentHint": &a.IdempotentHint, "openWorldHint": &a.OpenWorldHint} {
		raw, ok := m[name]
		if !ok {
			continue
		}
		b, isBool := raw.(bool)
		if !isBool {
			return Annotations{}, fieldErr(field+"."+name, "must be true or false, not %v", raw)
		}
		*dst = &b
	}
	return a, nil
}

func filter(field string, m map[string]any) (Filter, error) {
	var f Filter
	for _, part := range []struct {
		name string
		dst  *[]Glob
	}{{"include", &f.Include}, {"exclude", &f.Exclude}} {
		v, ok := m[part.name]
		if !ok || v == nil {
			continue
		}
		list, isList := v.([]any)
		if !isList {
			return Filter{}, fieldErr(field+"."+part.name, "must be a list of names or globs")
		}
		for i, item := range list {
			at := field + "." + part.name + "[" + strconv.Itoa(i) + "]"
			s, err := str(at, item)
			if err != nil {
				return Filter{}, err
			}
			g, err := ParseGlob(s)
			if err != nil {
				return Filter{}, fieldErr(at, "%w", err)
			}
			*part.dst = append(*part.dst, g)
		}
	}
	return f, nil
}

// object reads v as a mapping with only the keys known (any key, if none
// is given).
func object(field string, v any, known ...string) (map[string]any, error) {
	m, ok := v.(map[string]any)
	if !ok {
		if field == "" {
			return nil, &ExposureError{Err: errors.New("must be a mapping (prefix, tools, prompts, resources)")}
		}
		return nil, fieldErr(field, "must be a mapping")
	}
	if len(known) > 0 {
		for _, k := range slices.Sorted(maps.Keys(m)) {
			if !slices.Contains(known, k) {
				at := k
				if field != "" {
					at = field + "." + k
				}
				return nil, fieldErr(at, "unknown field (known: %s)", strings.Join(known, ", "))
			}
		}
	}
	return m, nil
}

func str(field string, v any) (string, error) {
	switch s := v.(type) {
	case string:
		return s, nil
	case nil:
		return "", nil
	}
	return "", fieldErr(field, "must be a string, not %v", v)
}

// Check says whether p fits a server offering tools (their own names):
// no override renames a tool onto the name another tool keeps. The
// error names the override's field.
func (p *Exposure) Check(tools []string) error {
	if p == nil {
		return nil
	}
	final := map[string]string{} // name before the prefix → own name
	sorted := slices.Clone(tools)
	slices.Sort(sorted)
	// Tools keeping their names first, so that the error names the
	// rename, not the tool renamed onto.
	slices.SortStableFunc(sorted, func(a, b string) int {
		return boolCmp(p.ownName(a) != a, p.ownName(b) != b)
	})
	for _, t := range sorted {
		if !p.KeepsTool(t) {
			continue
		}
		name := p.ownName(t)
		if other, dup := final[name]; dup && other != t {
			return fieldErr("tools.overrides."+t+".name", "%q is the name of the server's tool %s: two tools cannot share a name", name, other)
		}
		final[name] = t
	}
	return nil
}

func boolCmp(a, b bool) int {
	switch {
	case a == b:
		return 0
	case !a:
		return -1
	}
	return 1
}
