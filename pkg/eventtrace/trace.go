package eventtrace

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"time"

	"github.com/musterd/musterd/pkg/events"
)

const (
	// Format is the header's format field.
	Format = "musterd-trace"
	// Version is the newest format version this package reads and writes.
	// Version 2 adds the end line; a writer that never ends its trace with
	// one writes version 1, which older readers read too.
	Version = 2
	// VersionEnd is the first version with the end line.
	VersionEnd = 2
	// MaxLineBytes bounds one line of a trace, newline excluded. An event
	// line this long would be an event of many thousands of keys; the bound
	// keeps a corrupt file from exhausting memory.
	MaxLineBytes = 16 << 20
)

// Duration is a time.Duration written as Go spells it: "100ms", "5m30s".
type Duration time.Duration

// MarshalText writes d as time.Duration.String does.
func (d Duration) MarshalText() ([]byte, error) { return []byte(time.Duration(d).String()), nil }

// UnmarshalText reads what time.ParseDuration does.
func (d *Duration) UnmarshalText(text []byte) error {
	v, err := time.ParseDuration(string(text))
	if err != nil {
		return err
	}
	*d = Duration(v)
	return nil
}

// Config is the effective configuration of the run a trace records: what
// shapes the events the pipeline emits, so that a replay can use the same.
type Config struct {
	Debounce         Duration `json:"debounce"`
	Workers          int      `json:"workers"`
	ReconcileTimeout Duration `json:"reconcileTimeout"`
	BackoffBase      Duration `json:"backoffBase"`
	BackoffMax       Duration `json:"backoffMax"`
	Jitter           float64  `json:"jitter"`
	MaxRetries       int      `json:"maxRetries"`
	Resync           Duration `json:"resync"`
}

// Header is a trace's first line.
type Header struct {
	// Format is always [Format]; NewWriter sets it.
	Format string `json:"format"`
	// Version is the format version. NewWriter writes it, or 1 if it is
	// zero: a writer that may end its trace with an end line
	// ([Writer.End]) asks for [VersionEnd].
	Version int `json:"version"`
	// Musterd is the version of the musterd that wrote the trace; empty if
	// the writer does not know it.
	Musterd string `json:"musterd"`
	// Start is the time offsets count from. Required.
	Start time.Time `json:"start"`
	// Config is the recording daemon's configuration; absent (zero) where
	// the writer does not know it, as in the API's stream.
	Config Config `json:"config,omitzero"`
}

// Entry is one recorded event. Its type and correlation ID are the event's.
type Entry struct {
	// At is the event's offset from the header's Start.
	At    time.Duration
	Event events.Event
}

// Trace is a whole trace, as Read returns it.
type Trace struct {
	Header  Header
	Entries []Entry
	// End is the trace's end line, nil if it has none: a trace without one
	// ended as its writer stopped (a recording's end, a stream closed by
	// the daemon's shutdown or lost with its connection).
	End *End
}

// End is a trace's end line: why its writer ended it early.
type End struct {
	// Reason says why, one of the End… constants; a reader accepts others,
	// from newer writers.
	Reason string `json:"end"`
	// At is the offset at which it ended, never before the last event's.
	At time.Duration `json:"at"`
	// Dropped counts the events lost: published after the last event in
	// the trace and not in it.
	Dropped uint64 `json:"dropped"`
}

// Reasons of an end line.
const (
	// EndSlowClient ends the API's trace stream of a client too slow to
	// keep up: its subscription dropped events, and the trace has no
	// holes, so it ends before the first dropped one.
	EndSlowClient = "slow-client"
	// EndShutdown ends the API's trace stream when the daemon stops.
	EndShutdown = "shutdown"
)

// Writer writes a trace. It buffers: call Flush. A Writer is not safe for
// concurrent use.
type Writer struct {
	buf     *bufio.Writer
	start   time.Time
	last    time.Duration
	line    []byte
	version int
	ended   bool
}

// NewWriter writes h, with Format, its Version (1 if zero) and its Start in
// UTC, as the header line of a trace on w (buffered, like every line).
// h.Start must be set, and h.Version at most Version.
func NewWriter(w io.Writer, h Header) (*Writer, error) {
	if h.Start.IsZero() {
		return nil, errors.New("trace: the header needs a start time")
	}
	if h.Version < 0 || h.Version > Version {
		return nil, fmt.Errorf("trace: cannot write version %d (this musterd writes 1 to %d)", h.Version, Version)
	}
	h.Format, h.Version, h.Start = Format, max(h.Version, 1), h.Start.Round(0).UTC()
	header, err := json.Marshal(h)
	if err != nil {
		return nil, fmt.Errorf("trace: header: %w", err)
	}
	tw := &Writer{buf: bufio.NewWriterSize(w, 64<<10), start: h.Start, version: h.Version}
	// Buffered like every line: a destination that cannot be written shows
	// at the first Flush, and a slow one never delays the caller here.
	tw.buf.Write(header)
	tw.buf.WriteByte('\n')
	return tw, nil
}

// Write appends e at offset at. Offsets must not decrease, nor be negative.
func (w *Writer) Write(at time.Duration, e events.Event) error {
	if e == nil {
		return errors.New("trace: cannot write a nil event")
	}
	if w.ended {
		return errors.New("trace: the trace has ended")
	}
	if at < w.last {
		return fmt.Errorf("trace: offset %s of %s is before the previous event's %s", at, e.EventType(), w.last)
	}
	payload, err := json.Marshal(e)
	if err != nil {
		return fmt.Errorf("trace: marshal %s: %w", e.EventType(), err)
	}
	w.line = w.line[:0]
	w.line = append(w.line, `{"at":`...)
	w.line = strconv.AppendInt(w.line, int64(at), 10)
	w.line = append(w.line, `,"type":`...)
	w.line = appendString(w.line, e.EventType())
	w.line = append(w.line, `,"correlationId":`...)
	w.line = appendString(w.line, e.Metadata().CorrelationID)
	w.line = append(w.line, `,"event":`...)
	w.line = append(w.line, payload...)
	w.line = append(w.line, "}\n"...)
	if _, err := w.buf.Write(w.line); err != nil {
		return fmt.Errorf("trace: write: %w", err)
	}
	w.last = at
	return nil
}

// Record appends e at the offset of its time from the header's Start,
// raised to the previous event's offset where it is smaller: events are
// recorded in the order they were published, and two publishers may
// publish in another order than they stamped their events.
func (w *Writer) Record(e events.Event) error {
	if e == nil {
		return errors.New("trace: cannot write a nil event")
	}
	return w.Write(max(e.Metadata().Time.Sub(w.start), w.last), e)
}

// End appends the end line: the trace ends at t (raised to the last
// event's offset) for reason, having lost dropped events. Nothing can be
// written after it. The header must be of VersionEnd or later.
func (w *Writer) End(t time.Time, reason string, dropped uint64) error {
	switch {
	case w.version < VersionEnd:
		return fmt.Errorf("trace: an end line needs version %d; the header says %d", VersionEnd, w.version)
	case reason == "":
		return errors.New("trace: an end line needs a reason")
	case w.ended:
		return errors.New("trace: the trace has ended")
	}
	line, err := json.Marshal(End{Reason: reason, At: max(t.Sub(w.start), w.last), Dropped: dropped})
	if err != nil {
		return fmt.Errorf("trace: end line: %w", err)
	}
	w.buf.Write(line)
	if err := w.buf.WriteByte('\n'); err != nil {
		return fmt.Errorf("trace: write: %w", err)
	}
	w.ended = true
	return nil
}

// Flush writes what is buffered to the underlying writer.
func (w *Writer) Flush() error {
	if err := w.buf.Flush(); err != nil {
		return fmt.Errorf("trace: write: %w", err)
	}
	return nil
}

// appendString appends s as a JSON string, escaped as encoding/json does.
func appendString(dst []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			quoted, _ := json.Marshal(s) // a string always marshals
			return append(dst, quoted...)
		}
	}
	dst = append(dst, '"')
	dst = append(dst, s...)
	return append(dst, '"')
}

// ReadFile reads the trace in the file at path. Like Read, with an error
// wrapping ErrTruncated it returns the entries before the cut too.
func ReadFile(path string) (*Trace, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("trace: %w", err)
	}
	defer f.Close()
	t, err := Read(f)
	if err != nil {
		// t is nil, or with ErrTruncated the entries before the cut.
		return t, fmt.Errorf("%s: %w", path, err)
	}
	return t, nil
}

// line is an event line, or the end line, as it is read.
type line struct {
	End           *string         `json:"end"`
	Dropped       *uint64         `json:"dropped"`
	At            *int64          `json:"at"`
	Type          string          `json:"type"`
	CorrelationID *string         `json:"correlationId"`
	Event         json.RawMessage `json:"event"`
}

// Read reads a whole trace, strictly: see the package documentation. Fields
// it does not know, in the header or an event line (not in a payload), are
// ignored, so that additive changes keep the version.
func Read(r io.Reader) (*Trace, error) {
	lines := lineReader{r: bufio.NewReaderSize(r, 64<<10)}
	data, err := lines.next()
	if err == io.EOF {
		return nil, errors.New("trace: line 1: missing header: the trace is empty")
	}
	if err != nil {
		return nil, err
	}
	t := &Trace{}
	if err := readHeader(data, &t.Header); err != nil {
		return nil, fmt.Errorf("trace: line 1: %w", err)
	}
	known := map[string]bool{}
	for _, name := range events.Types() {
		known[name] = true
	}
	var last time.Duration
	for {
		data, err := lines.next()
		if err == io.EOF {
			return t, nil
		}
		if err != nil {
			return nil, err
		}
		if t.End != nil {
			return nil, fmt.Errorf("trace: line %d: a line after the end line", lines.n)
		}
		entry, end, err := readEntry(data, known, last)
		if err == nil && end != nil {
			if t.Header.Version < VersionEnd {
				err = fmt.Errorf("an end line needs version %d; the header says %d", VersionEnd, t.Header.Version)
			}
			t.End = end
		}
		if err != nil && lines.unterminated && !json.Valid(data) {
			// The last line was cut short: the recording stopped mid-write
			// (a crash, a full disk). What came before it is intact.
			return t, fmt.Errorf("trace: line %d: %w: %w", lines.n, ErrTruncated, err)
		}
		if err != nil {
			return nil, fmt.Errorf("trace: line %d: %w", lines.n, err)
		}
		if end == nil {
			last = entry.At
			t.Entries = append(t.Entries, entry)
		}
	}
}

func readHeader(data []byte, h *Header) error {
	if err := json.Unmarshal(data, h); err != nil {
		return fmt.Errorf("malformed header: %w", err)
	}
	switch {
	case h.Format != Format:
		return fmt.Errorf("missing header: format is %q, not %q", h.Format, Format)
	case h.Version > Version:
		return fmt.Errorf("version %d is newer than this musterd reads (%d)", h.Version, Version)
	case h.Version < 1:
		return fmt.Errorf("version %d is not a version of the format", h.Version)
	case h.Start.IsZero():
		return errors.New("the header has no start time")
	case h.Config.Debounce < 0 || h.Config.ReconcileTimeout < 0 || h.Config.BackoffBase < 0 || h.Config.BackoffMax < 0 ||
		h.Config.Resync < 0 || h.Config.Workers < 0 || h.Config.MaxRetries < 0 || h.Config.Jitter < 0:
		return errors.New("the header's config has a negative value")
	}
	return nil
}

// maxOffset bounds an event's offset, far beyond any recording, so that
// arithmetic on offsets cannot overflow.
const maxOffset = 100 * 365 * 24 * time.Hour

// ErrTruncated is wrapped by Read's error when the last line of a trace is
// cut short, as a recording stopped mid-write leaves it. Read then returns
// the entries before that line too; errors.Is(err, ErrTruncated) lets a
// caller accept them.
var ErrTruncated = errors.New("the last line is cut short")

// readEntry reads an event line, or the end line, which it returns as end.
func readEntry(data []byte, known map[string]bool, last time.Duration) (_ Entry, end *End, _ error) {
	var l line
	if err := json.Unmarshal(data, &l); err != nil {
		return Entry{}, nil, fmt.Errorf("malformed event line: %w", err)
	}
	if l.End != nil {
		end, err := readEnd(l, last)
		return Entry{}, end, err
	}
	switch {
	case l.At == nil:
		return Entry{}, nil, errors.New(`the event line has no "at" offset`)
	case *l.At < 0:
		return Entry{}, nil, fmt.Errorf("offset %d is negative", *l.At)
	case time.Duration(*l.At) > maxOffset:
		return Entry{}, nil, fmt.Errorf("offset %d is beyond a century", *l.At)
	case len(bytes.TrimSpace(l.Event)) == 0 || bytes.Equal(bytes.TrimSpace(l.Event), []byte("null")):
		return Entry{}, nil, errors.New("the event line has no payload")
	case time.Duration(*l.At) < last:
		return Entry{}, nil, fmt.Errorf("offset %d is before the previous line's %d: entries out of order", *l.At, int64(last))
	case l.Type == "":
		return Entry{}, nil, errors.New("the event line has no type")
	case !known[l.Type]:
		return Entry{}, nil, fmt.Errorf("unknown event type %q", l.Type)
	case l.CorrelationID == nil:
		return Entry{}, nil, errors.New(`the event line has no "correlationId"`)
	}
	// events.Unmarshal reads "type" and "event" and ignores the rest.
	e, err := events.Unmarshal(data)
	if err != nil {
		return Entry{}, nil, err
	}
	if id := e.Metadata().CorrelationID; id != *l.CorrelationID {
		return Entry{}, nil, fmt.Errorf("correlationId %q differs from its %s's %q", *l.CorrelationID, l.Type, id)
	}
	if e.Metadata().Time.IsZero() {
		return Entry{}, nil, fmt.Errorf("the %s has no time", l.Type)
	}
	if k, ok := e.(events.Keyed); ok {
		if key := k.ResourceKey(); key.Kind == "" || key.Name == "" {
			return Entry{}, nil, fmt.Errorf("the %s names no resource (kind and name are required)", l.Type)
		}
	}
	return Entry{At: time.Duration(*l.At), Event: e}, nil, nil
}

// readEnd checks the end line l.
func readEnd(l line, last time.Duration) (*End, error) {
	switch {
	case *l.End == "":
		return nil, errors.New("the end line has no reason")
	case l.Type != "" || l.Event != nil || l.CorrelationID != nil:
		return nil, errors.New("a line is an event or the end line, not both")
	case l.At == nil:
		return nil, errors.New(`the end line has no "at" offset`)
	case *l.At < 0 || time.Duration(*l.At) > maxOffset:
		return nil, fmt.Errorf("offset %d is negative or beyond a century", *l.At)
	case time.Duration(*l.At) < last:
		return nil, fmt.Errorf("offset %d is before the previous line's %d", *l.At, int64(last))
	}
	end := &End{Reason: *l.End, At: time.Duration(*l.At)}
	if l.Dropped != nil {
		end.Dropped = *l.Dropped
	}
	return end, nil
}

// lineReader reads lines of at most MaxLineBytes, counting them.
type lineReader struct {
	r   *bufio.Reader
	n   int
	buf []byte
	// unterminated: the line last returned had no newline, so it may have
	// been cut short.
	unterminated bool
}

// next returns the next line without its newline, or io.EOF after the
// last. An empty line is an error: a trace has none.
func (lr *lineReader) next() ([]byte, error) {
	lr.buf = lr.buf[:0]
	for {
		chunk, err := lr.r.ReadSlice('\n')
		lr.buf = append(lr.buf, chunk...)
		if len(bytes.TrimSuffix(lr.buf, []byte("\n"))) > MaxLineBytes {
			return nil, fmt.Errorf("trace: line %d: longer than %d bytes", lr.n+1, MaxLineBytes)
		}
		switch {
		case err == bufio.ErrBufferFull:
			continue
		case err == io.EOF && len(lr.buf) == 0:
			return nil, io.EOF
		case err != nil && err != io.EOF:
			return nil, fmt.Errorf("trace: line %d: %w", lr.n+1, err)
		}
		lr.n++
		lr.unterminated = err == io.EOF
		line := bytes.TrimSuffix(lr.buf, []byte("\n"))
		if len(bytes.TrimSpace(line)) == 0 {
			return nil, fmt.Errorf("trace: line %d: empty line", lr.n)
		}
		return line, nil
	}
}
