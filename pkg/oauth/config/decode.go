package config

import (
	"encoding"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// decoder reads a YAML node onto a value of this package's types, field by
// field, so that every error names the key's path, and an unknown key is
// an error, never ignored: yaml.v3's KnownFields names neither the path
// nor the key meant.
type decoder struct{}

var (
	secretType   = reflect.TypeFor[Secret]()
	durationType = reflect.TypeFor[time.Duration]()
	textType     = reflect.TypeFor[encoding.TextUnmarshaler]()
)

// decode reads n onto v (addressable). A null node leaves v as it is, as
// yaml.v3 does: "server:" alone keeps the defaults.
func (d decoder) decode(n *yaml.Node, v reflect.Value, path string) error {
	for n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	if n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null" {
		return nil
	}
	t := v.Type()
	switch {
	case t == secretType:
		s, err := d.scalar(n, path, "a string")
		if err != nil {
			return err
		}
		v.Set(reflect.ValueOf(NewSecret(s)))
		return nil
	case t == durationType:
		s, err := d.scalar(n, path, "a duration such as 720h")
		if err != nil {
			return err
		}
		dur, err := time.ParseDuration(s)
		if err != nil {
			return fmt.Errorf("%s (line %d): %q is not a duration such as 720h or 30m", path, n.Line, s)
		}
		v.SetInt(int64(dur))
		return nil
	case reflect.PointerTo(t).Implements(textType):
		s, err := d.scalar(n, path, "a string")
		if err != nil {
			return err
		}
		if err := v.Addr().Interface().(encoding.TextUnmarshaler).UnmarshalText([]byte(s)); err != nil {
			return fmt.Errorf("%s (line %d): %w", path, n.Line, err)
		}
		return nil
	}
	switch t.Kind() {
	case reflect.Struct:
		return d.structure(n, v, path)
	case reflect.Pointer:
		if v.IsNil() {
			v.Set(reflect.New(t.Elem()))
		}
		return d.decode(n, v.Elem(), path)
	case reflect.Slice:
		if n.Kind != yaml.SequenceNode {
			return fmt.Errorf("%s (line %d): want a list, not %s", path, n.Line, describe(n))
		}
		s := reflect.MakeSlice(t, len(n.Content), len(n.Content))
		for i, item := range n.Content {
			if err := d.decode(item, s.Index(i), fmt.Sprintf("%s[%d]", path, i)); err != nil {
				return err
			}
		}
		v.Set(s)
		return nil
	case reflect.Map:
		if n.Kind != yaml.MappingNode {
			return fmt.Errorf("%s (line %d): want a mapping, not %s", path, n.Line, describe(n))
		}
		if v.IsNil() {
			v.Set(reflect.MakeMapWithSize(t, len(n.Content)/2))
		}
		return d.entries(n, v, path)
	case reflect.String:
		s, err := d.scalar(n, path, "a string")
		if err != nil {
			return err
		}
		v.SetString(s)
		return nil
	case reflect.Bool:
		// As yaml.v3 reads a bool for muster: true, false, and YAML 1.1's
		// yes, no, on, off.
		s, err := d.scalar(n, path, "true or false")
		if err != nil {
			return err
		}
		var b bool
		if n.Decode(&b) != nil {
			return fmt.Errorf("%s (line %d): want true or false, not %q", path, n.Line, s)
		}
		v.SetBool(b)
		return nil
	case reflect.Int:
		s, err := d.scalar(n, path, "a whole number")
		if err != nil {
			return err
		}
		var i int
		if n.Decode(&i) != nil {
			return fmt.Errorf("%s (line %d): want a whole number, not %q", path, n.Line, s)
		}
		v.SetInt(int64(i))
		return nil
	}
	return fmt.Errorf("%s: no decoding for %s", path, t) // a type this package added without teaching decode
}

// entries reads a mapping's entries into the map v: those its merge keys
// (<<) bring first, then its own, which win, as yaml.v3 reads them.
func (d decoder) entries(n *yaml.Node, v reflect.Value, path string) error {
	for _, src := range mergeSources(n) {
		if err := d.decode(src, v, path); err != nil {
			return err
		}
	}
	own := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if isMergeKey(n.Content[i]) {
			continue
		}
		k, err := d.scalar(n.Content[i], path, "a string key")
		if err != nil {
			return err
		}
		if own[k] {
			return fmt.Errorf("%s.%s (line %d): given twice", path, k, n.Content[i].Line)
		}
		own[k] = true
		elem := reflect.New(v.Type().Elem()).Elem()
		if err := d.decode(n.Content[i+1], elem, path+"."+k); err != nil {
			return err
		}
		v.SetMapIndex(reflect.ValueOf(k), elem)
	}
	return nil
}

// mergeSources are the mappings n's merge keys (<<: *a, <<: [*a, *b])
// bring into it, in the order they are applied.
func mergeSources(n *yaml.Node) []*yaml.Node {
	var out []*yaml.Node
	for i := 0; i+1 < len(n.Content); i += 2 {
		if !isMergeKey(n.Content[i]) {
			continue
		}
		v := n.Content[i+1]
		for v.Kind == yaml.AliasNode {
			v = v.Alias
		}
		if v.Kind == yaml.SequenceNode {
			// yaml.v3: of a list, the earlier mapping wins.
			for j := len(v.Content) - 1; j >= 0; j-- {
				out = append(out, v.Content[j])
			}
			continue
		}
		out = append(out, v)
	}
	return out
}

func isMergeKey(k *yaml.Node) bool {
	return k.Kind == yaml.ScalarNode && k.ShortTag() == "!!merge"
}

// structure reads a mapping onto a struct by its fields' yaml tags: what
// its merge keys (<<) bring first, then its own keys, which win.
func (d decoder) structure(n *yaml.Node, v reflect.Value, path string) error {
	if n.Kind != yaml.MappingNode {
		return fmt.Errorf("%s (line %d): want a mapping, not %s", path, n.Line, describe(n))
	}
	for _, src := range mergeSources(n) {
		if err := d.decode(src, v, path); err != nil {
			return err
		}
	}
	fields := map[string]int{}
	var names []string
	for i := range v.NumField() {
		f := v.Type().Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if name == "" || name == "-" || !f.IsExported() {
			continue
		}
		fields[name] = i
		names = append(names, name)
	}
	seen := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		kn := n.Content[i]
		if isMergeKey(kn) {
			continue
		}
		key, err := d.scalar(kn, path, "a key")
		if err != nil {
			return err
		}
		at := path + "." + key
		idx, ok := fields[key]
		if !ok {
			if near := nearest(key, names); near != "" {
				return fmt.Errorf("%s (line %d): unknown key; did you mean %s?", at, kn.Line, near)
			}
			return fmt.Errorf("%s (line %d): unknown key; the keys of %s are %s", at, kn.Line, path, strings.Join(names, ", "))
		}
		if seen[key] {
			return fmt.Errorf("%s (line %d): given twice", at, kn.Line)
		}
		seen[key] = true
		field := v.Field(idx)
		if v.Type().Field(idx).Tag.Get("split") == "commas" {
			err = d.commaList(n.Content[i+1], field, at)
		} else {
			err = d.decode(n.Content[i+1], field, at)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// commaList reads muster's comma-separated list ("a, b"), or a YAML list,
// onto a []string: each item trimmed, empty ones dropped.
func (d decoder) commaList(n *yaml.Node, v reflect.Value, path string) error {
	for n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	var items []string
	if n.Kind == yaml.SequenceNode {
		if err := d.decode(n, reflect.ValueOf(&items).Elem(), path); err != nil {
			return err
		}
	} else if n.ShortTag() != "!!null" {
		s, err := d.scalar(n, path, "a comma-separated list")
		if err != nil {
			return err
		}
		items = strings.Split(s, ",")
	}
	var out []string
	for _, item := range items {
		if item = strings.TrimSpace(item); item != "" {
			out = append(out, item)
		}
	}
	v.Set(reflect.ValueOf(out))
	return nil
}

// scalar returns a scalar node's text, or an error saying what was wanted.
func (d decoder) scalar(n *yaml.Node, path, want string) (string, error) {
	for n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	if n.Kind != yaml.ScalarNode {
		return "", fmt.Errorf("%s (line %d): want %s, not %s", path, n.Line, want, describe(n))
	}
	return n.Value, nil
}

func describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	}
	return strconv.Quote(n.Value)
}

// nearest returns the known key closest to key, if one is close enough to
// be what was meant: the same but for case, or a few edits away.
func nearest(key string, known []string) string {
	best, bestDist := "", -1
	for _, k := range known {
		d := editDistance(strings.ToLower(key), strings.ToLower(k))
		if bestDist < 0 || d < bestDist {
			best, bestDist = k, d
		}
	}
	limit := 2
	if len(key) >= 12 {
		limit = 3
	}
	if bestDist < 0 || bestDist > limit || bestDist >= len(key) {
		return ""
	}
	return best
}

// editDistance is Levenshtein's distance between a and b, by bytes.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
