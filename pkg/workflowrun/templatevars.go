package workflowrun

import (
	"slices"
	"strings"
)

// inputRefs are the references to the input in template s as muster's
// template_vars lists them: each whitespace-separated word holding
// ".input." gives what follows its dot up to the first "}" ("input.name"
// from "{{ .input.name }}" or "{{.input.name}}"), in order of appearance.
// It is muster's reading, word for word, so that the lists agree: a
// reference inside parentheses keeps its ")", as muster's does.
func inputRefs(s string) []string {
	if !strings.Contains(s, ".input.") {
		return nil
	}
	var out []string
	for _, word := range strings.Fields(s) {
		start := strings.Index(word, ".input.")
		if start < 0 {
			continue
		}
		rest := word[start+1:]
		if end := strings.IndexByte(rest, '}'); end >= 0 {
			rest = rest[:end]
		} else {
			rest = strings.TrimSuffix(strings.TrimSuffix(rest, "}}"), "}")
		}
		if rest != "" {
			out = append(out, rest)
		}
	}
	return out
}

// track notes the input references of every template in v (a decoded JSON
// value about to be rendered), for the result's template_vars: muster
// lists those of the templates it rendered, in the order it rendered them,
// each once.
func (r *runner) track(sc *scope, v any) {
	var refs []string
	var walk func(any)
	walk = func(v any) {
		switch v := v.(type) {
		case string:
			if strings.Contains(v, "{{") && strings.Contains(v, "}}") {
				refs = append(refs, inputRefs(v)...)
			}
		case map[string]any:
			for _, k := range sortedKeys(v) {
				walk(v[k])
			}
		case []any:
			for _, e := range v {
				walk(e)
			}
		}
	}
	walk(v)
	r.noteVars(sc, refs)
}

// noteVars adds refs not yet listed to sc's template_vars, or the run's.
func (r *runner) noteVars(sc *scope, refs []string) {
	if len(refs) == 0 {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	list := &r.templateVars
	if sc.tvars != nil {
		list = sc.tvars
	}
	for _, ref := range refs {
		if !slices.Contains(*list, ref) {
			*list = append(*list, ref)
		}
	}
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
