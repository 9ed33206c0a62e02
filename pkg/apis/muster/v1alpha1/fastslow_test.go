package v1alpha1

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"
)

// slowParseFile is parseFile without the fast path: every document's tree
// is built from yaml.v3's node, as for any file the fast path declines.
func slowParseFile(data []byte) ([]parsedDocument, *FieldError) {
	nodes, ferr := parseDocuments(data)
	docs := make([]parsedDocument, len(nodes))
	for i, n := range nodes {
		docs[i].node = n
	}
	return docs, ferr
}

// fastSlowDiff describes how DecodeFile's documents differ from those the
// same decoder makes of yaml.v3's trees (objects, hashes, errors,
// warnings, lines, the file's error), or is "". took says whether the fast path took the
// file, the only case in which the two can differ.
func fastSlowDiff(path string, data []byte) (diff string, took bool) {
	// One parser to ask whether the fast path takes the file, another to
	// decode it: a parser is released (into the pool) once.
	probe := new(fastParser)
	_, took = probe.parse(data)
	probe.release()
	if !took || checkText(data) != nil {
		return "", false
	}
	p := new(fastParser)
	defer p.release()
	got, gotErr := decodeFile(nil, path, data, checkText, p.parseFile, decodeDocument)
	want, wantErr := decodeFile(nil, path, data, checkText, slowParseFile, decodeDocument)
	if !reflect.DeepEqual(wantErr, gotErr) {
		return fmt.Sprintf("file error differs for\n%s\nyaml.v3: %v\nfast:    %v", data, wantErr, gotErr), true
	}
	if len(want) != len(got) {
		return fmt.Sprintf("%d documents, yaml.v3 %d, for\n%s", len(got), len(want), data), true
	}
	for i := range want {
		w, g := want[i], got[i]
		w.Err, g.Err = metadataErrorsInOrder(w.Err), metadataErrorsInOrder(g.Err)
		if !reflect.DeepEqual(w.Err, g.Err) {
			return fmt.Sprintf("document %d: error differs for\n%s\nyaml.v3: %v\nfast:    %v", i, data, w.Err, g.Err), true
		}
		if !reflect.DeepEqual(w.Warnings, g.Warnings) {
			return fmt.Sprintf("document %d: warnings differ for\n%s\nyaml.v3: %v\nfast:    %v", i, data, w.Warnings, g.Warnings), true
		}
		if w.Hash != g.Hash {
			return fmt.Sprintf("document %d: hash differs for\n%s\nyaml.v3: %s\nfast:    %s", i, data, w.Hash, g.Hash), true
		}
		if !reflect.DeepEqual(w, g) {
			return fmt.Sprintf("document %d differs for\n%s\nyaml.v3: %#v\nfast:    %#v", i, data, w, g), true
		}
	}
	return "", true
}

// Every known input the fast path takes decodes to the same documents as
// through yaml.v3; the fast path takes at least the benchmark's files
// (else the comparison would prove little).
func TestDecodeFileFastMatchesSlowOnKnownInputs(t *testing.T) {
	inputs := knownInputs(t)
	taken := 0
	for _, data := range inputs {
		for _, path := range []string{"dir/file.yaml", "dir/Bad Name.yaml"} {
			diff, took := fastSlowDiff(path, data)
			if diff != "" {
				t.Error(diff)
			}
			if took && path == "dir/file.yaml" {
				taken++
			}
		}
	}
	if taken < len(benchFiles) {
		t.Errorf("the fast path took %d of %d known inputs", taken, len(inputs))
	}
}

// FuzzDecodeFileFastMatchesSlow holds the whole of DecodeFile by the fast
// path (objects, hashes, warnings, document and file errors) to the same decoder
// over yaml.v3's trees, on any input the fast path takes.
func FuzzDecodeFileFastMatchesSlow(f *testing.F) {
	for _, data := range knownInputs(f) {
		if len(data) < 4096 {
			f.Add(data)
		}
	}
	r := rand.New(rand.NewPCG(5, 6))
	for range 20 {
		f.Add((&docGen{r: r, faults: true}).file())
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if diff, _ := fastSlowDiff("fuzz/file.yaml", data); diff != "" {
			t.Fatal(diff)
		}
	})
}
