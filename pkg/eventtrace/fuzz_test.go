package eventtrace_test

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/musterd/musterd/pkg/eventtrace"
)

// readError is the form of every error Read returns: it names the line.
var readError = regexp.MustCompile(`^trace: line [1-9][0-9]*: `)

// FuzzRead requires that Read never panics, that every error names its
// line, that a truncated trace still returns what came before, and that
// whatever Read accepts, written again, reads back the same: the reader
// accepts nothing the writer could not have written.
func FuzzRead(f *testing.F) {
	recorded, _ := filepath.Glob(filepath.Join("..", "..", "testdata", "traces", "*.trace"))
	for _, file := range recorded {
		// Small ones only: mutating and minimizing are slow on big inputs.
		if data, err := os.ReadFile(file); err == nil && len(data) <= 8<<10 {
			f.Add(data)
		}
	}
	synced := `{"at":10,"type":"ResourceSynced","correlationId":"c","event":{"time":"2026-11-21T10:00:01Z","correlationId":"c","key":{"kind":"Workflow","namespace":"default","name":"w"},"attempt":1,"duration":0}}`
	for _, seed := range []string{"", headerLine, headerLine + "\n" + synced + "\n", headerLine + "\n" + synced[:40],
		headerLine + "\n\n", `{"format":"musterd-trace","version":1,"start":"2026-11-21T10:00:00Z"}` + "\n" + synced} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		tr, err := eventtrace.Read(bytes.NewReader(data))
		if err != nil {
			if !readError.MatchString(err.Error()) {
				t.Fatalf("error without its line: %v", err)
			}
			if tr != nil && !errors.Is(err, eventtrace.ErrTruncated) {
				t.Fatalf("a trace returned with an error other than ErrTruncated: %v", err)
			}
			if tr == nil {
				return
			}
		}
		var buf bytes.Buffer
		w, err := eventtrace.NewWriter(&buf, tr.Header)
		if err != nil {
			t.Fatalf("an accepted header cannot be written: %v", err)
		}
		for _, e := range tr.Entries {
			if err := w.Write(e.At, e.Event); err != nil {
				t.Fatalf("an accepted entry cannot be written: %v", err)
			}
		}
		if err := w.Flush(); err != nil {
			t.Fatal(err)
		}
		again, err := eventtrace.Read(strings.NewReader(buf.String()))
		if err != nil {
			t.Fatalf("what the writer wrote of an accepted trace does not read: %v\n%s", err, buf.String())
		}
		if len(again.Entries) != len(tr.Entries) {
			t.Fatalf("%d entries read back, not %d", len(again.Entries), len(tr.Entries))
		}
		for i := range tr.Entries {
			if again.Entries[i].At != tr.Entries[i].At || !reflect.DeepEqual(again.Entries[i].Event, tr.Entries[i].Event) {
				t.Fatalf("entry %d changed in a round trip: %+v, then %+v", i, tr.Entries[i], again.Entries[i])
			}
		}
	})
}
