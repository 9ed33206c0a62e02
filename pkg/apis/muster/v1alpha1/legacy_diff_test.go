package v1alpha1

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// sameAsLegacy fails t unless DecodeFile and the decoder it replaced
// (legacy_test.go) agree on data: the same documents (objects deeply equal,
// hashes, errors and warnings with their lines and fields) or the same
// file error.
func sameAsLegacy(t testing.TB, path string, data []byte) {
	t.Helper()
	if diff := legacyDiff(path, data); diff != "" {
		t.Fatal(diff)
	}
}

// legacyDiff describes how DecodeFile and the legacy decoder disagree on
// data, or is "".
func legacyDiff(path string, data []byte) string {
	want, wantErr := legacyDecodeFile(path, data)
	got, gotErr := DecodeFile(path, data)
	if !reflect.DeepEqual(wantErr, gotErr) {
		return fmt.Sprintf("file error differs for\n%s\nlegacy: %v\nnow:    %v", data, wantErr, gotErr)
	}
	if len(want) != len(got) {
		return fmt.Sprintf("%d documents instead of %d for\n%s", len(got), len(want), data)
	}
	for i := range want {
		w, g := want[i], got[i]
		w.Err, g.Err = metadataErrorsInOrder(w.Err), metadataErrorsInOrder(g.Err)
		if !reflect.DeepEqual(w.Err, g.Err) {
			return fmt.Sprintf("document %d: error differs for\n%s\nlegacy: %v\nnow:    %v", i, data, w.Err, g.Err)
		}
		if !reflect.DeepEqual(w.Warnings, g.Warnings) {
			return fmt.Sprintf("document %d: warnings differ for\n%s\nlegacy: %v\nnow:    %v", i, data, w.Warnings, g.Warnings)
		}
		if w.Hash != g.Hash {
			return fmt.Sprintf("document %d: hash differs for\n%s\nlegacy: %s\nnow:    %s", i, data, w.Hash, g.Hash)
		}
		if !reflect.DeepEqual(w, g) {
			return fmt.Sprintf("document %d differs for\n%s\nlegacy: %#v\nnow:    %#v", i, data, w.Object, g.Object)
		}
	}
	return ""
}

// metadataErrorsInOrder returns err with the errors of several labels or
// of several annotations, which Kubernetes reports in the random order of
// a map's iteration, sorted, so that both decoders' can be compared.
func metadataErrorsInOrder(err error) error {
	var fes FieldErrors
	if !errors.As(err, &fes) {
		return err
	}
	fes = slices.Clone(fes)
	for i := 0; i < len(fes); {
		j := i + 1
		if f := fes[i].Field; f == "metadata.labels" || f == "metadata.annotations" {
			for j < len(fes) && fes[j].Field == f && fes[j].Line == fes[i].Line {
				j++
			}
			slices.SortStableFunc(fes[i:j], func(a, b *FieldError) int { return strings.Compare(a.Msg, b.Msg) })
		}
		i = j
	}
	return fes
}

// fuzzCorpus returns the inputs of testdata/fuzz/FuzzDecodeFile.
func fuzzCorpus(t testing.TB) [][]byte {
	files, err := filepath.Glob("testdata/fuzz/FuzzDecodeFile/*")
	if err != nil {
		t.Fatal(err)
	}
	var inputs [][]byte
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		_, literal, ok := strings.Cut(strings.TrimSpace(string(data)), "\n")
		s, err := strconv.Unquote(strings.TrimSuffix(strings.TrimPrefix(literal, "[]byte("), ")"))
		if !ok || err != nil {
			t.Fatalf("%s: not a corpus file: %v", file, err)
		}
		inputs = append(inputs, []byte(s))
	}
	return inputs
}

// knownInputs are the inputs the decoder's differential tests use: the fuzz corpus, the
// reference examples and CRDs, the benchmark's files and the legacy
// decoder's seeds.
func knownInputs(t testing.TB) [][]byte {
	inputs := fuzzCorpus(t)
	for _, pattern := range []string{"*.yaml", "crds/*.yaml"} {
		files, _ := filepath.Glob(filepath.Join(referenceDir, pattern))
		for _, file := range files {
			data, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			inputs = append(inputs, data)
		}
	}
	for _, f := range benchFiles {
		inputs = append(inputs, []byte(f.src))
	}
	for _, s := range legacySeeds {
		inputs = append(inputs, []byte(s))
	}
	return inputs
}

func TestDecodeFileMatchesLegacyOnKnownInputs(t *testing.T) {
	for _, data := range knownInputs(t) {
		sameAsLegacy(t, "dir/file.yaml", data)
		sameAsLegacy(t, "dir/Bad Name.yaml", data)
		if len(data) > 4096 {
			continue // the CRDs and the deeply nested seeds: slow to take apart
		}
		// Every line left out, in turn, for the errors of broken files.
		lines := strings.SplitAfter(string(data), "\n")
		for i := range lines {
			sameAsLegacy(t, "dir/file.yaml", []byte(strings.Join(lines[:i], "")+strings.Join(lines[i+1:], "")))
		}
	}
}

// legacySeeds are inputs for the paths the generator rarely takes.
var legacySeeds = []string{
	stdioServer, remoteHeader, workflowHeader, billionLaughs, "", "~\n", "---\n---\n", "- a\n",
	stdioServer + "---\n" + stdioServer,
	strings.Replace(stdioServer, "v1alpha1", "v1beta1", 1),
	strings.Replace(stdioServer, "apiVersion: muster.giantswarm.io/v1alpha1", "apiVersion: [1, {a: 2.5}]", 1),
	stdioServer + "  description: a\x7fb\n", stdioServer + "  description: a\x00b\n", stdioServer + "  description: \xc3\n",
	"\ufeff" + stdioServer, stdioServer + "# \ufeff\n", stdioServer + "  description: \u0085\u2028\U0001F600\n",
	strings.ReplaceAll(stdioServer, "\n", "\r\n"), stdioServer + "  description: \"\\x01\\ud800\"\n",
	stdioServer + "  timeout: 18446744073709551615\n  env: {A: 1}\n",
	stdioServer + "  timeout: 9223372036854775807\n",
	stdioServer + "  timeout: -9223372036854775808\n",
	stdioServer + "  timeout: 0x1F\n  autoStart: yes\n",
	stdioServer + "  timeout: !!int \"12\"\n  autoStart: !!bool \"true\"\n",
	stdioServer + "  <<: {description: merged, command: no}\n",
	stdioServer + "  <<: [{description: a}, {description: b, toolPrefix: p}]\n",
	// The deepest nesting encoding/json allows, 10,000, and one more: args
	// stands at level 5.
	nested("[", "]", 9995), nested("{a: ", "}", 9996),
	workflowHeader + "  steps:\n  - id: a\n    tool: t\n    args: {b: " + strings.Repeat("[", 9996) + strings.Repeat("]", 9996) +
		", a: " + strings.Repeat("{a: ", 9996) + "1" + strings.Repeat("}", 9996) + "}\n",
	workflowHeader + "  steps:\n  - id: a\n    tool: t\n    args: {x: \"<&>\\u2028\\u2029\\t\\x7f\\x01é\", y: [1.5, 1e21, 1e-7, -0.0, 0.000001, 123456789.125], z: 18446744073709551615, w: ~}\n",
	workflowHeader + "  steps:\n  - id: a\n    tool: t\n    allow_failure: true\n    allowFailure: false\n  - id: b\n    tool: t\n    allowFailure: ~\n    allow_failure: true\n",
	workflowHeader + "  output: {b: 1, a: [x, {d: 2, c: ~}], \"\": \"\", \"é\": 1, \"A\": 2}\n  steps:\n  - id: a\n    tool: ''\n",
}

// TestDecodeFileConcurrently decodes on several goroutines at once, as the
// filesystem watcher does on every core, sharing the decoders' pool and
// caches.
func TestDecodeFileConcurrently(t *testing.T) {
	var inputs [][]byte
	r := rand.New(rand.NewPCG(5, 6))
	for range 100 {
		inputs = append(inputs, (&docGen{r: r, faults: r.IntN(2) == 0}).file())
	}
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range inputs {
				if diff := legacyDiff("gen/file.yaml", inputs[(i+g*25)%len(inputs)]); diff != "" {
					t.Error(diff)
					return
				}
			}
		})
	}
	wg.Wait()
}

// nested is a workflow with a step argument of n nested open ... close.
func nested(open, close string, n int) string {
	return workflowHeader + "  steps:\n  - id: a\n    tool: t\n    args: {x: " + strings.Repeat(open, n) + "1" + strings.Repeat(close, n) + "}\n"
}

// TestDecodeFileMatchesLegacyOnGeneratedFiles compares the decoders on
// random files made from the types' fields, mostly valid, with wrong
// types, unknown and misspelt fields, odd scalars, anchors and merges mixed
// in, and on the same files with a line left out.
func TestDecodeFileMatchesLegacyOnGeneratedFiles(t *testing.T) {
	n := 1000
	if testing.Short() {
		n = 100
	}
	r := rand.New(rand.NewPCG(15, 2026))
	for range n {
		g := &docGen{r: r, faults: r.Float64() < 0.5}
		data := g.file()
		sameAsLegacy(t, "gen/file.yaml", data)
		if lines := strings.SplitAfter(string(data), "\n"); len(lines) > 1 {
			i := r.IntN(len(lines))
			sameAsLegacy(t, "gen/file.yaml", []byte(strings.Join(lines[:i], "")+strings.Join(lines[i+1:], "")))
		}
	}
}

// docGen writes random definition files: mostly valid ones, in the many
// spellings YAML allows (quoting, flow style, anchors, merge keys,
// snake_case fields, nulls for unset fields), and, when faults is set, with
// mistakes of the kinds the decoder reports mixed in.
type docGen struct {
	r       *rand.Rand
	faults  bool
	b       strings.Builder
	anchors []string
	ids     int
}

func (g *docGen) chance(p float64) bool { return g.r.Float64() < p }

func (g *docGen) fault() bool { return g.faults && g.chance(0.03) }

func pick[T any](g *docGen, xs ...T) T { return xs[g.r.IntN(len(xs))] }

func (g *docGen) file() []byte {
	docs := 1
	if g.chance(0.3) {
		docs = 2 + g.r.IntN(2)
	}
	for i := range docs {
		if i > 0 || g.chance(0.1) {
			g.b.WriteString("---\n")
		}
		if g.chance(0.1) {
			g.b.WriteString("# a comment\n---\n")
		}
		g.document(docs == 1, i)
	}
	return []byte(g.b.String())
}

func (g *docGen) document(single bool, n int) {
	root := pick(g, mcpServerType, workflowType)
	g.anchors = nil
	if g.fault() {
		g.line(0, "apiVersion", pick(g, "v1", "~", "[a]", "muster.giantswarm.io/v1"))
	} else if !g.fault() {
		g.line(0, "apiVersion", pick(g, APIVersion, "'"+APIVersion+"'"))
	}
	if g.fault() {
		g.line(0, "kind", pick(g, "Deployment", "~", "[a]", "mcpserver", "1"))
	} else {
		g.line(0, "kind", root.Name())
	}
	if !single || !g.chance(0.2) || g.fault() {
		g.key(0, "metadata")
		name := "r" + strconv.Itoa(n)
		if g.fault() {
			name = pick(g, "Bad_Name", "r0", "~", "[x]")
		}
		g.line(2, "name", name)
		if g.chance(0.3) {
			g.line(2, "namespace", pick(g, "team-a", "default", "~"))
		} else if g.fault() {
			g.line(2, "namespace", pick(g, "a.b", "1", "Team"))
		}
		if g.chance(0.2) {
			g.key(2, "labels")
			g.line(4, "team", pick(g, "a", "'b'", "\"\""))
			if g.fault() {
				g.line(4, "bad", "-bad-")
			}
		}
		if g.chance(0.1) {
			g.line(2, "annotations", pick(g, "{example.com/owner: me}", "{}", "{a: \"x: y\"}"))
		}
		if g.fault() {
			g.line(2, pick(g, "uid", "nmae", "generation"), "1")
		}
	}
	if g.chance(0.05) {
		g.line(0, "spec", pick(g, "~", "{}"))
	} else {
		g.key(0, "spec")
		spec, _ := root.FieldByName("Spec")
		g.fields(2, spec.Type, nil)
	}
	if g.fault() {
		g.line(0, pick(g, "status", "spek", "extra"), "{}")
	}
}

// requiredFields are those the decoder requires, by type and JSON name.
var genRequired = map[string]bool{
	"MCPServerSpec.type": true, "ArgDefinition.type": true, "WorkflowSpec.steps": true,
	"WorkflowStep.id": true, "WorkflowSubStep.id": true, "WorkflowSubStep.tool": true,
	"WorkflowForEach.items": true, "WorkflowForEach.steps": true, "ClientCredentialsSecretRef.name": true,
	"AuthorizationServerConfig.issuer": true, "MCPServerFamily.name": true, "MCPServerFamily.instanceArg": true,
}

// plan picks the fields of a struct of type t to write, keeping to the
// rules between them, and fixes the values some of them must have.
func (g *docGen) plan(t reflect.Type) (want map[string]bool, fixed map[string]string) {
	want, fixed = map[string]bool{}, map[string]string{}
	for name := range jsonFields(t) {
		want[name] = genRequired[t.Name()+"."+name] || g.chance(0.3)
	}
	only := func(names ...string) {
		keep := pick(g, names...)
		for _, n := range names {
			want[n] = n == keep
		}
	}
	switch t {
	case reflect.TypeFor[MCPServerSpec]():
		typ := pick(g, MCPServerTypeStdio, MCPServerTypeStreamableHTTP, MCPServerTypeSSE)
		fixed["type"] = string(typ)
		want["command"], want["url"] = !typ.IsRemote(), typ.IsRemote()
		if typ.IsRemote() {
			want["args"] = false
		} else {
			want["headers"] = false
		}
	case reflect.TypeFor[MCPServerAuth]():
		typ := pick(g, AuthTypeOAuth, AuthTypeNone)
		fixed["type"] = string(typ)
		if want["authorizationServer"] = typ == AuthTypeOAuth && g.chance(0.5); want["authorizationServer"] {
			want["forwardToken"], want["tokenExchange"] = false, false
		}
	case reflect.TypeFor[TokenExchangeConfig]():
		if want["enabled"] {
			want["dexTokenEndpoint"], want["connectorId"] = true, true
		}
	case reflect.TypeFor[WorkflowStep]():
		only("tool", "tool", "forEach", "parallel")
	case reflect.TypeFor[WorkflowCondition]():
		only("template", "tool", "fromStep")
		if !want["template"] && !want["expect"] {
			want["expectNot"] = true
		}
	}
	return want, fixed
}

// fields writes the fields of struct type t at indent.
func (g *docGen) fields(indent int, t reflect.Type, _ map[string]string) {
	want, fixed := g.plan(t)
	fields := jsonFields(t)
	names := make([]string, 0, len(fields))
	for name := range fields {
		if want[name] || g.fault() {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	g.r.Shuffle(len(names), func(i, j int) { names[i], names[j] = names[j], names[i] })
	if len(names) == 0 {
		g.line(indent, pick(g, "description", "<<"), "{}")
	}
	for _, name := range names {
		key := name
		if snakeCaseTypes[t] && g.chance(0.2) {
			key = snakeCase(name)
		}
		switch {
		case g.fault():
			key = pick(g, strings.ToLower(key), key+"s", "unknown", "x_"+key)
		case !genRequired[t.Name()+"."+name] && g.chance(0.02):
			g.line(indent, key, pick(g, "~", "null", ""))
			continue
		}
		g.value(indent, key, fields[name], name, fixed[name])
		if g.fault() {
			g.line(indent, pick(g, snakeCase(name), name), "true")
		}
	}
}

// value writes key with a value of type t at indent.
func (g *docGen) value(indent int, key string, t reflect.Type, field, fixed string) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch {
	case g.fault():
		g.line(indent, key, pick(g, "1", "x", "[a]", "{a: 1}", "2.5", "~", "true", "-1", "''"))
	case fixed != "":
		g.line(indent, key, g.quote(fixed))
	case t == jsonValueType:
		if g.chance(0.4) {
			g.line(indent, key, pick(g, g.anyScalar(), "["+g.anyScalar()+", {a: "+g.anyScalar()+"}]", "{}", "[]"))
			return
		}
		g.anchored(indent, key, func(indent int) { g.json(indent, 0) })
	case t.Kind() == reflect.Struct:
		g.anchored(indent, key, func(indent int) { g.fields(indent, t, nil) })
	case t.Kind() == reflect.Map:
		if g.chance(0.1) {
			g.line(indent, key, "{}")
			return
		}
		g.anchored(indent, key, func(indent int) {
			for i := range 1 + g.r.IntN(3) {
				g.value(indent, g.quote(pick(g, "a", "B", "HOME", "X-Token", "path.to", "é", "<&>", "")+strconv.Itoa(i)), t.Elem(), "", "")
			}
		})
	case t.Kind() == reflect.Slice:
		n := g.r.IntN(3)
		if field == "steps" || field == "parallel" {
			n = 1 + g.r.IntN(3)
		}
		if n == 0 {
			g.line(indent, key, "[]")
			return
		}
		if t.Elem().Kind() != reflect.Struct && g.chance(0.3) {
			items := make([]string, n)
			for i := range items {
				items[i] = g.scalar(t.Elem(), field)
			}
			g.line(indent, key, "["+strings.Join(items, ", ")+"]")
			return
		}
		g.key(indent, key)
		for range n {
			if t.Elem().Kind() == reflect.Struct {
				g.b.WriteString(strings.Repeat(" ", indent) + "-\n")
				g.fields(indent+2, t.Elem(), nil)
			} else {
				g.b.WriteString(strings.Repeat(" ", indent) + "- " + g.scalar(t.Elem(), field) + "\n")
			}
		}
	default:
		g.line(indent, key, g.scalar(t, field))
	}
}

// anchored writes key with a block body, now and then anchored, aliased
// or merging an anchor.
func (g *docGen) anchored(indent int, key string, body func(indent int)) {
	if len(g.anchors) > 0 && g.chance(0.1) {
		g.line(indent, key, "*"+pick(g, g.anchors...))
		return
	}
	anchor := ""
	if g.chance(0.1) {
		name := "a" + strconv.Itoa(len(g.anchors))
		anchor = " &" + name
		defer func() { g.anchors = append(g.anchors, name) }()
	}
	g.b.WriteString(strings.Repeat(" ", indent) + key + ":" + anchor + "\n")
	if len(g.anchors) > 0 && g.chance(0.1) {
		g.line(indent+2, "<<", "*"+pick(g, g.anchors...))
	}
	body(indent + 2)
}

// json writes the body of a free-form mapping.
func (g *docGen) json(indent, depth int) {
	for i := range 1 + g.r.IntN(4) {
		k := g.quote(pick(g, "name", "image", "<b>", "a&b", "é", "Z", "z", "", "\u2028", "key with spaces") + strconv.Itoa(i))
		switch {
		case depth < 3 && g.chance(0.2):
			g.key(indent, k)
			g.json(indent+2, depth+1)
		case depth < 3 && g.chance(0.1):
			g.key(indent, k)
			for range 1 + g.r.IntN(2) {
				g.b.WriteString(strings.Repeat(" ", indent) + "- " + g.anyScalar() + "\n")
			}
		case g.chance(0.1):
			g.line(indent, k, "["+g.anyScalar()+", {x: "+g.anyScalar()+", "+k+": []}]")
		default:
			g.line(indent, k, g.anyScalar())
		}
	}
}

func (g *docGen) anyScalar() string {
	return pick(g, g.scalar(reflect.TypeFor[string](), ""), g.scalar(reflect.TypeFor[int](), "timeout"), g.scalar(reflect.TypeFor[bool](), ""),
		"1.5", "-0.0", "1e21", "1e20", "1e-7", "0.000001", "3.0", "0.1", "-2.5e-300", "~", "null", "2026-01-02", "2026-01-02T10:00:00Z",
		"0o17", "0x1f", "017", "1_000", "+5", "-0", "9223372036854775808", "18446744073709551615", "\"\\u2028\"", "'<&>'", "\"\\x7f\"", "!!str 5", "!!float 1")
}

func (g *docGen) scalar(t reflect.Type, field string) string {
	switch t.Kind() {
	case reflect.Bool:
		return pick(g, "true", "false", "True", "FALSE", "!!bool true")
	case reflect.Int, reflect.Int64, reflect.Int32:
		if field == "timeout" {
			return pick(g, "1", "30", "60", "300", "0x1F", "1_0", "+7", "0o17", "017", "!!int 12")
		}
		return strconv.Itoa(g.r.IntN(100))
	}
	if values, ok := enumValues[t]; ok {
		return g.quote(pick(g, values...))
	}
	var s string
	switch field {
	case "url", "dexTokenEndpoint", "expectedIssuer", "issuer":
		s = pick(g, "https://api.example.com/mcp", "https://auth.example.com", "https://dex.example.com/token?x=1")
	case "id":
		g.ids++
		s = pick(g, "s", "step_", "build-") + strconv.Itoa(g.ids)
	case "name", "toolPrefix", "connectorId":
		s = pick(g, "kubernetes", "local", "k8s", "a-b_c")
	case "instanceArg":
		s = pick(g, "cluster", "a_b")
	case "fromStep":
		s = "s1"
	case "items", "template":
		s = pick(g, "{{ .input.xs }}", "{{ not .input.dry_run }}", "true")
	case "tool", "command":
		s = pick(g, "x_tool", "npx", "kubectl")
	default:
		s = pick(g, "x", "npx", "", "with \"quotes\" & <tags>", "é ü", "tab\there", "a b c", "\u2029 and \u2028", "{{ .results.a.b }}",
			"#1", "line\nbreak", "yes", "no", "on", "true", "null", "12", "1.5", "~", "0x10", "a: b", "- x", "*x", "&y", "!z", "%p", "@q", "`r`")
	}
	return g.quote(s)
}

// quote writes s as a YAML string: plain where that reads as a string,
// else (and now and then anyway) single- or double-quoted.
func (g *docGen) quote(s string) string {
	plain := s != "" && !strings.ContainsAny(s[:1], "-?:,[]{}#&*!|>'\"%@`.~ 0123456789+") && !strings.Contains(s, ": ") &&
		!strings.Contains(s, " #") && !strings.HasSuffix(s, " ") && !strings.HasSuffix(s, ":") &&
		!strings.ContainsAny(s, "\t\n\u2028\u2029") && !slices.Contains([]string{"true", "True", "TRUE", "false", "False", "FALSE", "null", "Null", "NULL"}, s)
	switch {
	case plain && g.chance(0.7):
		return s
	case !strings.ContainsAny(s, "\t\n\u2028\u2029\x7f") && g.chance(0.5):
		return "'" + strings.ReplaceAll(s, "'", "''") + "'"
	}
	return strconv.Quote(s)
}

func (g *docGen) key(indent int, key string) {
	g.b.WriteString(strings.Repeat(" ", indent) + key + ":\n")
}

func (g *docGen) line(indent int, key, value string) {
	g.b.WriteString(strings.Repeat(" ", indent) + key + ": " + value + "\n")
}

func snakeCase(name string) string {
	var b strings.Builder
	for _, r := range name {
		if r >= 'A' && r <= 'Z' {
			b.WriteString("_" + string(r+'a'-'A'))
		} else {
			b.WriteRune(r)
		}
	}
	return b.String()
}

// FuzzDecodeFileMatchesLegacy holds DecodeFile to the decoder it replaced
// on any input.
func FuzzDecodeFileMatchesLegacy(f *testing.F) {
	for _, data := range fuzzCorpus(f) {
		f.Add(data)
	}
	for _, s := range legacySeeds {
		if len(s) < 4096 { // not the deeply nested ones: too slow to mutate
			f.Add([]byte(s))
		}
	}
	r := rand.New(rand.NewPCG(1, 2))
	for range 20 {
		f.Add((&docGen{r: r, faults: true}).file())
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		sameAsLegacy(t, "fuzz/file.yaml", data)
	})
}
