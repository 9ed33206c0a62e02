package v1alpha1

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// fastParse is the fast path on a parser of its own, never released, so
// that its trees stay good.
func fastParse(data []byte) ([]*yvalue, bool) { return new(fastParser).parse(data) }

// fastDiff describes how the fast path's trees of data differ from those
// yaml.v3 and buildTree make, or is "". took reports whether the fast path
// took data at all; where it did not, there is nothing to compare.
func fastDiff(data []byte) (diff string, took bool) {
	if checkText(data) != nil {
		return "", false // DecodeFile never parses it
	}
	trees, ok := fastParse(data)
	if !ok {
		return "", false
	}
	nodes, ferr := parseDocuments(data)
	if ferr != nil {
		return fmt.Sprintf("the fast path took a file yaml.v3 rejects (%v):\n%s", ferr, data), true
	}
	if len(nodes) != len(trees) {
		return fmt.Sprintf("%d documents, yaml.v3 %d, in\n%s", len(trees), len(nodes), data), true
	}
	for i, n := range nodes {
		want, ferr := buildTree(n)
		if ferr != nil {
			return fmt.Sprintf("the fast path took a document buildTree rejects (%v):\n%s", ferr, data), true
		}
		if !reflect.DeepEqual(want, trees[i]) {
			return fmt.Sprintf("document %d differs in\n%s\nyaml.v3: %s\nfast:    %s", i, data, dumpTree(want), dumpTree(trees[i])), true
		}
	}
	return "", true
}

// dumpTree writes v with every field, lines included, for a diff.
func dumpTree(v *yvalue) string {
	var b strings.Builder
	var dump func(v *yvalue)
	dump = func(v *yvalue) {
		fmt.Fprintf(&b, "%s@%d", v.typeName(), v.line)
		switch v.kind {
		case yMap:
			b.WriteString("{")
			if v.entries == nil {
				b.WriteString("nil")
			}
			for i := range v.entries {
				fmt.Fprintf(&b, "%q@%d: ", v.entries[i].key, v.entries[i].line)
				dump(&v.entries[i].value)
				b.WriteString(", ")
			}
			b.WriteString("}")
		case ySeq:
			b.WriteString("[")
			if v.items == nil {
				b.WriteString("nil")
			}
			for i := range v.items {
				dump(&v.items[i])
				b.WriteString(", ")
			}
			b.WriteString("]")
		default:
			fmt.Fprintf(&b, "(%q %d)", v.str, v.bits)
		}
	}
	dump(v)
	return b.String()
}

// TestFastParseMatchesYAMLOnKnownInputs compares the trees of every input,
// and of every input with a line left out, where the fast path takes it.
func TestFastParseMatchesYAMLOnKnownInputs(t *testing.T) {
	took := 0
	for _, data := range knownInputs(t) {
		if diff, ok := fastDiff(data); diff != "" {
			t.Fatal(diff)
		} else if ok {
			took++
		}
		if len(data) > 4096 {
			continue
		}
		lines := strings.SplitAfter(string(data), "\n")
		for i := range lines {
			if diff, _ := fastDiff([]byte(strings.Join(lines[:i], "") + strings.Join(lines[i+1:], ""))); diff != "" {
				t.Fatal(diff)
			}
		}
	}
	t.Logf("the fast path took %d of the inputs", took)
}

// TestFastParseMatchesYAMLOnGeneratedFiles compares the trees of random
// files in the many spellings docGen writes (quoting, flow style, anchors,
// merge keys, nulls), with and without mistakes, and with a line left out.
func TestFastParseMatchesYAMLOnGeneratedFiles(t *testing.T) {
	n := 2000
	if testing.Short() {
		n = 200
	}
	r := rand.New(rand.NewPCG(25, 11))
	took := 0
	for range n {
		data := (&docGen{r: r, faults: r.Float64() < 0.5}).file()
		if diff, ok := fastDiff(data); diff != "" {
			t.Fatal(diff)
		} else if ok {
			took++
		}
		if lines := strings.SplitAfter(string(data), "\n"); len(lines) > 1 {
			i := r.IntN(len(lines))
			if diff, _ := fastDiff([]byte(strings.Join(lines[:i], "") + strings.Join(lines[i+1:], ""))); diff != "" {
				t.Fatal(diff)
			}
		}
	}
	// The generator mixes anchors, tags and flow mappings into most files,
	// and the fast path leaves those to yaml.v3; some must still be taken,
	// or this test compares nothing.
	if took < n/20 {
		t.Fatalf("the fast path took only %d of %d generated files", took, n)
	}
	t.Logf("the fast path took %d of %d generated files", took, n)
}

// TestFastParseTakesThePlainStyle pins what the fast path takes, so that a
// change that makes it give up on the common files (and the decode quietly
// slow again) fails here, and what it leaves to yaml.v3.
func TestFastParseTakesThePlainStyle(t *testing.T) {
	taken := map[string]string{
		"bench files":              benchFiles[0].src + "---\n" + benchFiles[1].src + "---\n" + benchFiles[2].src,
		"comments and blank lines": "# head\n\napiVersion: v # trailing\n  # indented\nkind: K\n\n",
		"quoting":                  "a: \"x: #y\" # c\nb: 'it s'\nc: ''\nd: \"\"\n",
		"scalars":                  "a: true\nb: false\nc: null\nd: 0\ne: -12\nf: /path\ng: _x\nh: a:b\ni: a#b\nj: x  y\n",
		"flow lists":               "a: []\nb: [x, 'yy', \"z\", 1, true]\nd: [ x ,z ] # c\n",
		"flow mappings":            "a: {}\nb: {x: 1, yy: 'z', w: \"{{ .v }}\"}\nc: { p: q ,r: s } # c\n",
		"compact sequences":        "steps:\n- id: a\n  args:\n  - x\n- id: b\nnext: 1\n",
		"indented sequences":       "steps:\n  - id: a\n    tool: t\n  -\n    id: b\n  - x\n  -   id: c\n      tool: u\n",
		"documents":                "---\na: 1\n---\n# only a comment\n---\nb: 2\n",
		"indented root":            "  a: 1\n  b:\n    c: 2\n",
		"keys":                     "app.kubernetes.io/name: x\nX-Request-Source: yy\nsnake_case: z\n",
		"the longest key":          strings.Repeat("k", 1024) + ": 1\nb: {" + strings.Repeat("k", 1024) + ": 1}\n",
	}
	examples, _ := filepath.Glob(filepath.Join(referenceDir, "*.yaml"))
	for _, file := range examples {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		taken[filepath.Base(file)] = string(data)
	}
	for name, src := range taken {
		if diff, ok := fastDiff([]byte(src)); diff != "" {
			t.Errorf("%s: %s", name, diff)
		} else if !ok {
			t.Errorf("%s: left to yaml.v3:\n%s", name, src)
		}
	}
	left := map[string]string{
		"anchor":                    "a: &x 1\nb: *x\n",
		"tag":                       "a: !!str 1\n",
		"merge key":                 "a: {b: 1}\n<<: {c: 2}\n",
		"block scalar":              "a: |\n  x\n",
		"folded scalar":             "a: >\n  x\n",
		"multi-line plain":          "a: x\n  y\n",
		"multi-line quoted":         "a: \"x\n  y\"\n",
		"escape":                    "a: \"x\\ny\"\n",
		"escaped single quote":      "a: 'it''s'\n",
		"nested flow mapping":       "a: {b: {c: 1}}\n",
		"flow mapping of a null":    "a: {b: , c: 1}\n",
		"duplicate flow key":        "a: {b: 1, b: 2}\n",
		"adjacent flow value":       "a: {\"b\":1}\n",
		"nested flow":               "a: [[1]]\n",
		"trailing comma":            "a: [1, ]\n",
		"tab":                       "a:\tb\n",
		"carriage return":           "a: b\r\n",
		"byte order mark":           "\ufeffa: b\n",
		"line separator":            "a: b\u2028c\n",
		"null by omission":          "a:\nb: 1\n",
		"null at the end":           "a: 1\nb:\n",
		"tilde":                     "a: ~\n",
		"yaml 1.1 boolean":          "a: yes\n",
		"boolean key":               "on: 1\n",
		"capitalised boolean":       "a: True\n",
		"octal":                     "a: 0o17\n",
		"leading zero":              "a: 012\n",
		"float":                     "a: 1.5\n",
		"quoted key":                "\"a\": 1\n",
		"a key too long":            strings.Repeat("k", 1025) + ": 1\n",
		"a flow key too long":       "b: {" + strings.Repeat("k", 1025) + ": 1}\n",
		"duplicate key":             "a: 1\na: 2\n",
		"mapping in a scalar":       "a: b: c\n",
		"key at a deeper indent":    "a: 1\n  b: 2\n",
		"key at a shallower indent": "a:\n    b: 1\n  c: 2\n",
		"sequence of sequences":     "- - a\n",
		"root sequence":             "- a\n",
		"root scalar":               "a\n",
		"directive":                 "%YAML 1.2\n---\na: 1\n",
		"document end":              "a: 1\n...\n",
		"separator with a comment":  "--- # c\na: 1\n",
		"comment without a space":   "a: 'x'#c\n",
		"non-ASCII start":           "a: über\n",
		"item after a scalar entry": "a: 1\n- b\n",
		"mapping value of an item":  "- a: 1\n  - b\n",
	}
	for name, src := range left {
		if _, ok := fastParse([]byte(src)); ok {
			t.Errorf("%s: taken by the fast path:\n%s", name, src)
		}
		if diff, _ := fastDiff([]byte(src)); diff != "" {
			t.Errorf("%s: %s", name, diff)
		}
	}
}

// FuzzFastParseMatchesYAML holds the fast path to yaml.v3 and buildTree on
// any input it takes.
func FuzzFastParseMatchesYAML(f *testing.F) {
	for _, data := range knownInputs(f) {
		if len(data) < 4096 {
			f.Add(data)
		}
	}
	r := rand.New(rand.NewPCG(3, 4))
	for range 20 {
		f.Add((&docGen{r: r, faults: true}).file())
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if diff, _ := fastDiff(data); diff != "" {
			t.Fatal(diff)
		}
	})
}

// TestDecodedObjectsHoldNothingOfTheParsersArenas decodes each benchmark
// file (maps, sequences, nested steps, conditions) with a parser of its
// own, then releases the parser, which clears its arenas: an object that
// shared a collection with the tree would change with them.
func TestDecodedObjectsHoldNothingOfTheParsersArenas(t *testing.T) {
	for _, f := range benchFiles {
		p := new(fastParser)
		docs, err := decodeFile(nil, f.path, []byte(f.src), checkText, p.parseFile, decodeDocument)
		if err != nil || len(docs) != 1 || docs[0].Err != nil {
			t.Fatalf("%s: %v %v", f.name, err, docs)
		}
		if len(p.keptEntries) == 0 {
			t.Fatalf("%s: the fast path did not take the file", f.name)
		}
		before := docs[0].Object.DeepCopyObject()
		p.release()
		if !reflect.DeepEqual(before, docs[0].Object) {
			t.Errorf("%s: the decoded object changed when its parser was released:\nbefore %#v\nafter  %#v", f.name, before, docs[0].Object)
		}
	}
}

// AppendFile adds a file's documents after those already in dst, which it
// leaves alone: one file's name is not another's duplicate, and a file
// that fails adds nothing.
func TestAppendFileAddsAFilesDocumentsAfterOthers(t *testing.T) {
	one := []byte("apiVersion: muster.giantswarm.io/v1alpha1\nkind: Workflow\nmetadata: {name: a}\nspec:\n  steps:\n    - id: s\n      tool: x\n")
	docs, err := AppendFile(nil, "workflows/a.yaml", one)
	if err != nil || len(docs) != 1 || docs[0].Err != nil {
		t.Fatalf("first file: %v %+v", err, docs)
	}
	docs, err = AppendFile(docs, "other/a.yaml", one) // the same name, another file
	if err != nil || len(docs) != 2 || docs[0].Err != nil || docs[1].Err != nil {
		t.Fatalf("second file: %v %+v", err, docs)
	}
	if docs[0].Name != "a" || docs[1].Name != "a" {
		t.Errorf("names %q %q", docs[0].Name, docs[1].Name)
	}
	kept := docs
	docs, err = AppendFile(docs, "workflows/bad.yaml", []byte("kind: [\n"))
	if err == nil || len(docs) != 2 || &docs[0] != &kept[0] {
		t.Errorf("a file that fails: err %v, %d documents, dst kept %v", err, len(docs), len(docs) > 0 && &docs[0] == &kept[0])
	}
	if empty, err := DecodeFile("workflows/empty.yaml", []byte("# nothing\n")); err != nil || empty == nil || len(empty) != 0 {
		t.Errorf("a file of no documents: %v %#v, want an empty slice", err, empty)
	}
}
