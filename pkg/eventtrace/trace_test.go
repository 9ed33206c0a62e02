package eventtrace_test

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/musterd/musterd/pkg/events"
	"github.com/musterd/musterd/pkg/events/eventstest"
	"github.com/musterd/musterd/pkg/eventtrace"
)

var start = time.Date(2026, 11, 21, 10, 0, 0, 123456789, time.UTC)

func header() eventtrace.Header {
	return eventtrace.Header{Musterd: "dev", Start: start, Config: eventtrace.Config{
		Debounce: eventtrace.Duration(100 * time.Millisecond), Workers: 2, ReconcileTimeout: eventtrace.Duration(5*time.Minute + 30*time.Second),
		BackoffBase: eventtrace.Duration(time.Second), BackoffMax: eventtrace.Duration(5 * time.Minute), Jitter: 0.1, MaxRetries: 5,
		Resync: eventtrace.Duration(10 * time.Minute),
	}}
}

const headerLine = `{"format":"musterd-trace","version":1,"musterd":"dev","start":"2026-11-21T10:00:00.123456789Z",` +
	`"config":{"debounce":"100ms","workers":2,"reconcileTimeout":"5m30s","backoffBase":"1s","backoffMax":"5m0s","jitter":0.1,"maxRetries":5,"resync":"10m0s"}}`

// catalogue returns one event of every catalogue type, at time at.
func catalogue(at time.Time, corr string) []events.Event {
	return eventstest.Catalogue(events.Meta{Time: at, CorrelationID: corr})
}

func write(t *testing.T, h eventtrace.Header, entries []eventtrace.Entry) string {
	t.Helper()
	var buf bytes.Buffer
	w, err := eventtrace.NewWriter(&buf, h)
	require.NoError(t, err)
	for _, e := range entries {
		require.NoError(t, w.Write(e.At, e.Event))
	}
	require.NoError(t, w.Flush())
	return buf.String()
}

func TestEveryCatalogueEventRoundTripsByteStable(t *testing.T) {
	var entries []eventtrace.Entry
	seen := map[string]bool{}
	for i, e := range catalogue(start.Add(time.Second), "c0ffee") {
		entries = append(entries, eventtrace.Entry{At: time.Duration(i) * 1234567, Event: e})
		seen[e.EventType()] = true
	}
	for _, name := range events.Types() {
		require.True(t, seen[name], "catalogue event %s has no sample", name)
	}
	text := write(t, header(), entries)
	lines := strings.Split(text, "\n")
	require.Len(t, lines, len(entries)+2, "header, one line per event, final newline")
	assert.Equal(t, headerLine, lines[0])
	assert.Equal(t, `{"at":1234567,"type":"IndexSynchronized","correlationId":"c0ffee","event":{"time":"2026-11-21T10:00:01.123456789Z","correlationId":"c0ffee","source":"kubernetes"}}`, lines[2])

	got, err := eventtrace.Read(strings.NewReader(text))
	require.NoError(t, err)
	want := header()
	want.Format, want.Version = eventtrace.Format, 1 // a writer that writes no end line writes version 1
	assert.Equal(t, &eventtrace.Trace{Header: want, Entries: entries}, got)
	assert.Equal(t, text, write(t, got.Header, got.Entries), "writing what was read gives the same bytes")
}

func TestHeaderWithoutConfigOmitsIt(t *testing.T) {
	text := write(t, eventtrace.Header{Start: start.In(time.FixedZone("CET", 3600))}, nil)
	assert.Equal(t, `{"format":"musterd-trace","version":1,"musterd":"","start":"2026-11-21T10:00:00.123456789Z"}`+"\n", text, "start in UTC")
	got, err := eventtrace.Read(strings.NewReader(text))
	require.NoError(t, err)
	assert.Equal(t, eventtrace.Config{}, got.Header.Config)
	assert.Empty(t, got.Entries)
}

func TestReadFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "run.trace")
	require.NoError(t, os.WriteFile(path, []byte(write(t, header(), []eventtrace.Entry{{At: 5, Event: events.BecameLeader{Meta: events.Meta{Time: start, CorrelationID: "x"}, Identity: "me"}}})), 0o644))
	got, err := eventtrace.ReadFile(path)
	require.NoError(t, err)
	require.Len(t, got.Entries, 1)
	assert.Equal(t, time.Duration(5), got.Entries[0].At)

	require.NoError(t, os.WriteFile(path, []byte(headerLine+"\n{}\n"), 0o644))
	_, err = eventtrace.ReadFile(path)
	assert.EqualError(t, err, path+`: trace: line 2: the event line has no "at" offset`)
	_, err = eventtrace.ReadFile(filepath.Join(t.TempDir(), "none"))
	assert.ErrorContains(t, err, "no such file")
}

func TestACutOffLastLineKeepsWhatCameBefore(t *testing.T) {
	synced := `{"at":10,"type":"ResourceSynced","correlationId":"c","event":{"time":"2026-11-21T10:00:01Z","correlationId":"c","key":{"kind":"Workflow","namespace":"default","name":"w"},"attempt":1,"duration":0}}`
	tr, err := eventtrace.Read(strings.NewReader(headerLine + "\n" + synced + "\n" + synced[:40]))
	require.ErrorIs(t, err, eventtrace.ErrTruncated)
	assert.Contains(t, err.Error(), "trace: line 3: the last line is cut short")
	require.NotNil(t, tr, "the entries before the cut are returned")
	assert.Len(t, tr.Entries, 1)

	path := filepath.Join(t.TempDir(), "cut.trace")
	require.NoError(t, os.WriteFile(path, []byte(headerLine+"\n"+synced+"\n"+synced[:40]), 0o600))
	tr, err = eventtrace.ReadFile(path)
	require.ErrorIs(t, err, eventtrace.ErrTruncated)
	require.NotNil(t, tr, "ReadFile too returns the entries before the cut")
	assert.Len(t, tr.Entries, 1)

	// A complete last line without a newline is not a cut: its errors are
	// errors.
	_, err = eventtrace.Read(strings.NewReader(headerLine + "\n" + strings.Replace(synced, `"at":10`, `"at":-1`, 1)))
	assert.NotErrorIs(t, err, eventtrace.ErrTruncated)
}

func TestReadRejectsEveryMalformedTraceNamingTheLine(t *testing.T) {
	synced := `{"at":10,"type":"ResourceSynced","correlationId":"c","event":{"time":"2026-11-21T10:00:01Z","correlationId":"c","key":{"kind":"Workflow","namespace":"default","name":"w"},"attempt":1,"duration":0}}`
	cases := map[string]struct{ input, want string }{
		"empty":             {"", "trace: line 1: missing header: the trace is empty"},
		"event line first":  {synced + "\n", `trace: line 1: missing header: format is "", not "musterd-trace"`},
		"other format":      {`{"format":"other","version":1,"start":"2026-11-21T10:00:00Z"}`, `trace: line 1: missing header: format is "other", not "musterd-trace"`},
		"newer version":     {`{"format":"musterd-trace","version":3,"start":"2026-11-21T10:00:00Z"}`, "trace: line 1: version 3 is newer than this musterd reads (2)"},
		"no version":        {`{"format":"musterd-trace","start":"2026-11-21T10:00:00Z"}`, "trace: line 1: version 0 is not a version of the format"},
		"no start":          {`{"format":"musterd-trace","version":1}`, "trace: line 1: the header has no start time"},
		"malformed header":  {`{"format":"musterd-trace",`, "trace: line 1: malformed header: unexpected end of JSON input"},
		"malformed line":    {headerLine + "\n" + synced + "\n" + `{"at":` + "\n" + synced, "trace: line 3: malformed event line: unexpected end of JSON input"},
		"empty line":        {headerLine + "\n\n" + synced, "trace: line 2: empty line"},
		"unknown type":      {headerLine + "\n" + synced + "\n" + synced + "\n" + `{"at":11,"type":"Foo","correlationId":"c","event":{}}`, `trace: line 4: unknown event type "Foo"`},
		"no type":           {headerLine + "\n" + `{"at":11,"correlationId":"c","event":{}}`, "trace: line 2: the event line has no type"},
		"no correlation id": {headerLine + "\n" + `{"at":11,"type":"BecameLeader","event":{}}`, `trace: line 2: the event line has no "correlationId"`},
		"out of order":      {headerLine + "\n" + synced + "\n" + strings.Replace(synced, `"at":10`, `"at":9`, 1), "trace: line 3: offset 9 is before the previous line's 10: entries out of order"},
		"negative offset":   {headerLine + "\n" + strings.Replace(synced, `"at":10`, `"at":-1`, 1), "trace: line 2: offset -1 is negative"},
		"type mismatch": {headerLine + "\n" + strings.Replace(synced, `"type":"ResourceSynced"`, `"type":"BecameLeader"`, 1),
			`trace: line 2: events: decode BecameLeader: json: unknown field "key"`},
		"no payload":    {headerLine + "\n" + `{"at":1,"type":"BecameLeader","correlationId":"c"}`, "trace: line 2: the event line has no payload"},
		"null payload":  {headerLine + "\n" + `{"at":1,"type":"BecameLeader","correlationId":"","event":null}`, "trace: line 2: the event line has no payload"},
		"empty payload": {headerLine + "\n" + `{"at":1,"type":"BecameLeader","correlationId":"","event":{}}`, "trace: line 2: the BecameLeader has no time"},
		"no resource": {headerLine + "\n" + `{"at":1,"type":"ResourceSynced","correlationId":"c","event":{"time":"2026-11-21T10:00:01Z","correlationId":"c","key":{"kind":"Workflow"},"attempt":1,"duration":0}}`,
			"trace: line 2: the ResourceSynced names no resource (kind and name are required)"},
		"huge offset":     {headerLine + "\n" + strings.Replace(synced, `"at":10`, `"at":9223372036854775807`, 1), "trace: line 2: offset 9223372036854775807 is beyond a century"},
		"negative config": {`{"format":"musterd-trace","version":1,"start":"2026-11-21T10:00:00Z","config":{"debounce":"-5s"}}`, "trace: line 1: the header's config has a negative value"},
		"correlation mismatch": {headerLine + "\n" + strings.Replace(synced, `"correlationId":"c","event"`, `"correlationId":"d","event"`, 1),
			`trace: line 2: correlationId "d" differs from its ResourceSynced's "c"`},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := eventtrace.Read(strings.NewReader(c.input))
			assert.EqualError(t, err, c.want)
		})
	}
}

func TestReadIgnoresUnknownEnvelopeFieldsSoAdditiveChangesKeepTheVersion(t *testing.T) {
	text := `{"format":"musterd-trace","version":1,"start":"2026-11-21T10:00:00Z","host":"later"}` + "\n" +
		`{"at":1,"type":"BecameLeader","correlationId":"c","node":"later","event":{"time":"2026-11-21T10:00:00Z","correlationId":"c","identity":"me"}}`
	got, err := eventtrace.Read(strings.NewReader(text))
	require.NoError(t, err)
	require.Len(t, got.Entries, 1)
	assert.Equal(t, "me", got.Entries[0].Event.(events.BecameLeader).Identity)
}

func TestReadTakesLinesLongerThanAScannersDefault(t *testing.T) {
	event := fmt.Sprintf(`{"at":1,"type":"ResourceChanged","correlationId":"c","event":{"time":"2026-11-21T10:00:00Z","correlationId":"c","key":{"kind":"Workflow","namespace":"default","name":"w"},"operation":"update","source":"filesystem","filePath":"%s"}}`,
		strings.Repeat("x", 1<<20))
	got, err := eventtrace.Read(strings.NewReader(headerLine + "\n" + event + "\n" + event))
	require.NoError(t, err, "1 MiB lines, far above bufio.Scanner's 64 KiB, with or without a final newline")
	require.Len(t, got.Entries, 2)
	assert.Len(t, got.Entries[1].Event.(events.ResourceChanged).FilePath, 1<<20)

	_, err = eventtrace.Read(strings.NewReader(headerLine + "\n" + event + "\n" + strings.Repeat(" ", eventtrace.MaxLineBytes+1)))
	assert.EqualError(t, err, fmt.Sprintf("trace: line 3: longer than %d bytes", eventtrace.MaxLineBytes))
}

func TestWriterKeepsOffsetsInOrder(t *testing.T) {
	var buf bytes.Buffer
	_, err := eventtrace.NewWriter(&buf, eventtrace.Header{})
	assert.EqualError(t, err, "trace: the header needs a start time")

	w, err := eventtrace.NewWriter(&buf, header())
	require.NoError(t, err)
	leader := func(at time.Time) events.Event {
		return events.BecameLeader{Meta: events.Meta{Time: at, CorrelationID: "c"}}
	}
	require.NoError(t, w.Write(10, leader(start)))
	assert.EqualError(t, w.Write(9, leader(start)), "trace: offset 9ns of BecameLeader is before the previous event's 10ns")
	assert.EqualError(t, w.Write(10, nil), "trace: cannot write a nil event")

	require.NoError(t, w.Record(leader(start.Add(time.Second))))      // 1s
	require.NoError(t, w.Record(leader(start.Add(time.Millisecond)))) // stamped earlier: 1s
	require.NoError(t, w.Record(leader(start.Add(2*time.Second))))    // 2s
	require.NoError(t, w.Flush())
	got, err := eventtrace.Read(&buf)
	require.NoError(t, err)
	var offsets []time.Duration
	for _, e := range got.Entries {
		offsets = append(offsets, e.At)
	}
	assert.Equal(t, []time.Duration{10, time.Second, time.Second, 2 * time.Second}, offsets)
}

// Version 2's end line: written by Writer.End as the last line, read into
// Trace.End, refused in a version 1 trace, and nothing may follow it.
func TestTheEndLineSaysWhyATraceEnded(t *testing.T) {
	start := time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)
	var buf bytes.Buffer
	w, err := eventtrace.NewWriter(&buf, eventtrace.Header{Start: start, Version: eventtrace.VersionEnd})
	require.NoError(t, err)
	leader := events.BecameLeader{Meta: events.Meta{Time: start.Add(time.Second), CorrelationID: "c"}, Identity: "me"}
	require.NoError(t, w.Record(leader))
	require.NoError(t, w.End(start.Add(time.Millisecond), eventtrace.EndSlowClient, 7)) // raised to the last event's offset
	assert.EqualError(t, w.Record(leader), "trace: the trace has ended")
	require.NoError(t, w.Flush())
	lines := strings.Split(buf.String(), "\n")
	require.Len(t, lines, 4)
	assert.Contains(t, lines[0], `"version":2`)
	assert.Equal(t, `{"end":"slow-client","at":1000000000,"dropped":7}`, lines[2])

	tr, err := eventtrace.Read(strings.NewReader(buf.String()))
	require.NoError(t, err)
	assert.Len(t, tr.Entries, 1)
	assert.Equal(t, &eventtrace.End{Reason: eventtrace.EndSlowClient, At: time.Second, Dropped: 7}, tr.End)

	v1, err := eventtrace.NewWriter(io.Discard, eventtrace.Header{Start: start})
	require.NoError(t, err)
	assert.EqualError(t, v1.End(start, eventtrace.EndShutdown, 0), "trace: an end line needs version 2; the header says 1")
	_, err = eventtrace.NewWriter(io.Discard, eventtrace.Header{Start: start, Version: 3})
	assert.EqualError(t, err, "trace: cannot write version 3 (this musterd writes 1 to 2)")

	v2 := strings.Replace(headerLine, `"version":1`, `"version":2`, 1)
	for name, c := range map[string]struct{ trace, err string }{
		"in version 1":      {headerLine + "\n" + `{"end":"shutdown","at":0}`, "trace: line 2: an end line needs version 2; the header says 1"},
		"a line after it":   {v2 + "\n" + `{"end":"shutdown","at":0}` + "\n" + `{"end":"shutdown","at":0}`, "trace: line 3: a line after the end line"},
		"no reason":         {v2 + "\n" + `{"end":"","at":0}`, "trace: line 2: the end line has no reason"},
		"no offset":         {v2 + "\n" + `{"end":"shutdown"}`, `trace: line 2: the end line has no "at" offset`},
		"an event as well":  {v2 + "\n" + `{"end":"shutdown","at":0,"type":"BecameLeader"}`, "trace: line 2: a line is an event or the end line, not both"},
		"before last event": {v2 + "\n" + `{"at":10,"type":"BecameLeader","correlationId":"c","event":{"time":"2026-11-21T10:00:01Z","correlationId":"c","identity":"me"}}` + "\n" + `{"end":"shutdown","at":9}`, "trace: line 3: offset 9 is before the previous line's 10"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := eventtrace.Read(strings.NewReader(c.trace))
			assert.EqualError(t, err, c.err)
		})
	}
	tr, err = eventtrace.Read(strings.NewReader(v2 + "\n" + `{"end":"a-newer-reason","at":5,"extra":true}` + "\n"))
	require.NoError(t, err, "unknown reasons and fields are a newer writer's")
	assert.Equal(t, &eventtrace.End{Reason: "a-newer-reason", At: 5}, tr.End)
}
