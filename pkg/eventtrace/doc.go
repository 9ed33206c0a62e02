// Package eventtrace records musterd's bus as an event trace, and reads traces
// back: the format of docs/trace-format.md, JSON Lines with a header line
// (format, version, musterd version, start time, effective configuration)
// followed by one line per event (offset from the start, type, correlation
// ID, payload), and in version 2 an optional end line saying why the trace
// ended early ([Writer.End], [Trace].End).
//
// Place in the pipeline: the [Recorder] is an observer beside the status
// and metrics subscribers. It subscribes to every event on the bus and
// publishes nothing. It imports only events and bus.
//
// Guarantees:
//
//   - Lossless recording: the Recorder never coalesces or drops an event;
//     while the writer lags, its mailbox grows (visible as
//     musterd_bus_pending{subscriber="recorder"}). Every event published
//     before the Recorder's Start context is cancelled is written (see
//     [Recorder.Start] for exactly what that means). With a memory budget
//     ([RecorderOptions].MaxPending, off by default), a spent budget fails
//     the recording loudly, with the count of events lost, and the trace
//     ends before the first of them, never with a hole.
//   - Publish order: entries are in the order the bus delivered them, which
//     is publish order. Offsets never decrease: an event stamped earlier
//     than the one published before it takes that one's offset.
//   - A full disk never stops reconciliation: a write error ends the
//     recording (logged once, returned from Start) and nothing else. Run
//     the Recorder as a non-critical component.
//   - Strict reading: [Read] rejects a trace that is malformed, of another
//     format or of a newer version, holds an unknown event type, a payload
//     that does not decode as its type, a correlation ID that differs from
//     its payload's, or offsets that decrease, with an error that names the
//     line ("trace: line 7: unknown event type \"Foo\"").
//   - Byte stability: writing what Read returned gives the same bytes.
package eventtrace
