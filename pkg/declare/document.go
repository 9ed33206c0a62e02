package declare

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"sort"
	"strings"

	yaml "go.yaml.in/yaml/v3"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/musterd/musterd/pkg/apis/muster/v1alpha1"
	"github.com/musterd/musterd/pkg/events"
	"github.com/musterd/musterd/pkg/redact"
)

// Definition is one resource's definition as a store holds it.
type Definition struct {
	Key events.Key
	// Spec is the spec as written, before defaults: what the file or the
	// CR holds.
	Spec map[string]any
	// Object is the decoded, defaulted and validated resource.
	Object v1alpha1.Object
	// Hash is the definition's content hash as the index will hold it
	// (v1alpha1.Document.Hash), once the watcher has read it.
	Hash string
	// Version identifies what is stored now: "sha256:<hex>" of the file's
	// bytes, or the CR's resourceVersion. An update or delete naming it
	// fails with a conflict if the stored definition is another.
	Version string
	// Where is the file (relative to the config directory) or the object
	// (namespace/name).
	Where string
	// UID and Generation are the CR's, in Kubernetes mode: the index holds
	// this definition once its entry has this UID and at least this
	// generation. Empty and 0 in filesystem mode, where Hash tells.
	UID        string
	Generation int64
	// Extra is the rest of the document beside spec (labels, annotations),
	// kept by updates.
	Extra map[string]any
}

// Kinds returns the kinds a store declares.
func Kinds() []string { return []string{v1alpha1.KindMCPServer, v1alpha1.KindWorkflow} }

// Dir is the directory of kind's files in muster's layout: "mcpservers",
// "workflows".
func Dir(kind string) (string, error) {
	switch kind {
	case v1alpha1.KindMCPServer:
		return "mcpservers", nil
	case v1alpha1.KindWorkflow:
		return "workflows", nil
	}
	return "", fmt.Errorf("unknown kind %q: want %s or %s", kind, v1alpha1.KindMCPServer, v1alpha1.KindWorkflow)
}

// checkKey rejects a key no definition may have, before it is used in a
// path: a name that is not a DNS-1123 subdomain (underscores allowed,
// v1alpha1.ValidName) could climb out of the kind's directory.
func checkKey(key events.Key) error {
	if _, err := Dir(key.Kind); err != nil {
		return err
	}
	if msgs := v1alpha1.ValidName(key.Name); len(msgs) > 0 {
		return &InvalidError{Key: key, Errs: v1alpha1.FieldErrors{{Field: "metadata.name", Msg: fmt.Sprintf("%q is not a valid name: %s", key.Name, strings.Join(msgs, "; "))}}}
	}
	if msgs := validation.IsDNS1123Label(key.Namespace); len(msgs) > 0 {
		return &InvalidError{Key: key, Errs: v1alpha1.FieldErrors{{Field: "metadata.namespace", Msg: fmt.Sprintf("%q is not a valid namespace: %s", key.Namespace, strings.Join(msgs, "; "))}}}
	}
	return nil
}

// Validate checks spec as the definition of key, exactly as the watcher
// will when it reads the document, and returns the definition it makes.
// extra is the document's other top-level content to keep (labels,
// annotations under metadata); nil for none.
func Validate(key events.Key, spec map[string]any, extra map[string]any) (Definition, []byte, error) {
	key = key.Canonical()
	if err := checkKey(key); err != nil {
		return Definition{}, nil, err
	}
	data, err := encode(key, spec, extra)
	if err != nil {
		return Definition{}, nil, &InvalidError{Key: key, Msg: scrub(spec, err.Error()), Spec: spec}
	}
	def, err := decode(key, data, "")
	if err != nil {
		if invalid, ok := errors.AsType[*InvalidError](err); ok {
			invalid.Spec = spec
		}
		return Definition{}, nil, err
	}
	return def, data, nil
}

// encode writes the document of key in muster's layout: apiVersion, kind,
// metadata, spec, in that order.
func encode(key events.Key, spec map[string]any, extra map[string]any) ([]byte, error) {
	meta := map[string]any{}
	if m, ok := extra["metadata"].(map[string]any); ok {
		maps.Copy(meta, m)
	}
	meta["name"] = key.Name
	delete(meta, "namespace")
	if key.Namespace != events.DefaultNamespace {
		meta["namespace"] = key.Namespace
	}
	doc := yaml.Node{Kind: yaml.MappingNode}
	add := func(k string, v any) error {
		var n yaml.Node
		if err := n.Encode(v); err != nil {
			return fmt.Errorf("%s: %w", k, err)
		}
		doc.Content = append(doc.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: k}, &n)
		return nil
	}
	if spec == nil {
		spec = map[string]any{}
	}
	for _, kv := range []struct {
		k string
		v any
	}{{"apiVersion", v1alpha1.APIVersion}, {"kind", key.Kind}, {"metadata", meta}, {"spec", spec}} {
		if err := add(kv.k, kv.v); err != nil {
			return nil, err
		}
	}
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(&doc); err != nil {
		return nil, err
	}
	if err := enc.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// decode reads data, a file's or a generated document's content, as the
// one definition of key. where names the file in errors; "" for a
// generated document, whose errors then carry neither file nor line.
func decode(key events.Key, data []byte, where string) (Definition, error) {
	path := where
	if path == "" {
		dir, _ := Dir(key.Kind)
		path = dir + "/" + key.Name + ".yaml"
	}
	docs, err := v1alpha1.DecodeFile(path, data)
	var secrets map[string]any
	if err == nil && len(docs) == 1 {
		secrets = rawSpec(data)
	}
	clean := func(fe *v1alpha1.FieldError) *v1alpha1.FieldError {
		c := *fe
		if where == "" {
			c.File, c.Line = "", 0
		}
		c.Msg = scrub(secrets, c.Msg)
		return &c
	}
	if err != nil {
		var fe *v1alpha1.FieldError
		if errors.As(err, &fe) {
			return Definition{}, &InvalidError{Key: key, Errs: v1alpha1.FieldErrors{clean(fe)}}
		}
		return Definition{}, &InvalidError{Key: key, Msg: redact.String(err.Error())}
	}
	if len(docs) != 1 {
		return Definition{}, &UneditableError{Key: key, Where: path, Why: fmt.Sprintf("holds %d documents", len(docs))}
	}
	d := docs[0]
	if d.Key() != key {
		return Definition{}, &UneditableError{Key: key, Where: path, Why: "declares " + d.Key().String()}
	}
	if d.Err != nil {
		var fes v1alpha1.FieldErrors
		if errors.As(d.Err, &fes) {
			out := make(v1alpha1.FieldErrors, len(fes))
			for i, fe := range fes {
				out[i] = clean(fe)
			}
			return Definition{}, &InvalidError{Key: key, Errs: out}
		}
		return Definition{}, &InvalidError{Key: key, Msg: scrub(secrets, redact.String(d.Err.Error()))}
	}
	if where == "" && len(d.Warnings) > 0 {
		// A definition declared through musterd is read as muster reads
		// the requests of its tools: strictly. Only files may carry fields
		// musterd ignores.
		refused := d.Warnings.Refused()
		for i, fe := range refused {
			refused[i] = clean(fe)
		}
		return Definition{}, &InvalidError{Key: key, Errs: refused}
	}
	def := Definition{Key: key, Object: d.Object, Hash: d.Hash, Version: version(data), Where: where}
	var raw map[string]any
	if err := yaml.Unmarshal(data, &raw); err == nil {
		def.Spec, _ = raw["spec"].(map[string]any)
		delete(raw, "spec")
		delete(raw, "apiVersion")
		delete(raw, "kind")
		def.Extra = raw
	}
	if def.Spec == nil {
		def.Spec = map[string]any{}
	}
	return def, nil
}

// rawSpec is data's spec, as plain values, for scrubbing; nil if none.
func rawSpec(data []byte) map[string]any {
	var raw map[string]any
	if yaml.Unmarshal(data, &raw) != nil {
		return nil
	}
	spec, _ := raw["spec"].(map[string]any)
	return spec
}

// version is the version of a file's content.
func version(data []byte) string {
	sum := sha256.Sum256(data)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// scrub removes the values of spec's env and headers from msg, longest
// first, then redacts what looks like a credential. A value is written to
// the definition as the user asked; it is never echoed.
func scrub(spec map[string]any, msg string) string {
	var secrets []string
	for _, field := range []string{"env", "headers"} {
		m, _ := spec[field].(map[string]any)
		for _, v := range m {
			if s := fmt.Sprint(v); len(s) >= 3 {
				secrets = append(secrets, s)
			}
		}
	}
	sort.Slice(secrets, func(i, j int) bool { return len(secrets[i]) > len(secrets[j]) })
	for _, s := range secrets {
		msg = strings.ReplaceAll(msg, s, "[redacted]")
	}
	return redact.String(msg)
}

// Scrub removes the values of spec's env and headers from msg, and
// redacts what looks like a credential, for callers that report errors of
// their own about spec.
func Scrub(spec map[string]any, msg string) string { return scrub(spec, msg) }

func yamlUnmarshal(data []byte, v any) error { return yaml.Unmarshal(data, v) }
