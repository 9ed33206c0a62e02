package v1alpha1

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzDecodeFile requires that DecodeFile never panics, that every error
// names the file (warnings too), and that every object it returns is valid
// and survives a JSON round trip with its hash.
func FuzzDecodeFile(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join(referenceDir, "*.yaml"))
	for _, file := range files {
		if data, err := os.ReadFile(file); err == nil {
			f.Add(data)
		}
	}
	for _, seed := range []string{
		stdioServer, remoteHeader + "  url: https://x.example/mcp\n  headers: {A: b}\n", billionLaughs,
		workflowHeader + "  steps:\n  - id: a\n    forEach: {items: x, steps: [{id: b, tool: t}]}\n  - id: c\n    parallel: [{id: d, tool: t}]\n",
		stdioServer + "---\n" + stdioServer, "a: &x [*x]\n", "", "- [\n",
	} {
		f.Add([]byte(seed))
	}
	const path = "fuzz/file.yaml"
	f.Fuzz(func(t *testing.T, data []byte) {
		docs, err := DecodeFile(path, data)
		if err != nil {
			var fe *FieldError
			if !errors.As(err, &fe) || fe.File != path || !strings.HasPrefix(err.Error(), path+":") {
				t.Fatalf("file error without the file name: %v", err)
			}
			return
		}
		for _, d := range docs {
			for _, w := range d.Warnings {
				if w.File != path {
					t.Fatalf("warning without the file name: %v", w)
				}
			}
			if d.Err != nil {
				var fes FieldErrors
				if !errors.As(d.Err, &fes) || len(fes) == 0 {
					t.Fatalf("document error is not FieldErrors: %v", d.Err)
				}
				for _, fe := range fes {
					if fe.File != path {
						t.Fatalf("document error without the file name: %v", fe)
					}
				}
				continue
			}
			if errs := d.Object.Validate(); len(errs) > 0 {
				t.Fatalf("decoded object is invalid: %v", errs)
			}
			encoded, err := json.Marshal(d.Object)
			if err != nil {
				t.Fatal(err)
			}
			again, err := DecodeFile(path, encoded)
			if err != nil || len(again) != 1 || again[0].Err != nil {
				t.Fatalf("round trip of %s failed: %v %v", encoded, err, again)
			}
			// The object holds no field the file had and the types do
			// not: its JSON has nothing to warn of, and the hash is
			// the document's without its warnings.
			if len(again[0].Warnings) > 0 {
				t.Fatalf("round trip of %s has warnings: %v", encoded, again[0].Warnings)
			}
			if want := hashJSON(d.Object, nil); again[0].Hash != want || (len(d.Warnings) == 0 && d.Hash != want) {
				t.Fatalf("round trip changed the hash of %s", encoded)
			}
		}
	})
}
