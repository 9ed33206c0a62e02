package events

import "time"

// TypeToolCallsCounted is ToolCallsCounted's stable type name.
const TypeToolCallsCounted = "ToolCallsCounted"

// ToolCallsCounted says that a server's tool calls in one interval of time
// were counted: the interval is over, and the router's recent history of
// the server's calls holds it. The router tells it (through the wiring: the
// router never imports the bus) once per interval in which the server had
// calls, after the interval ends, and never while nobody calls: a burst
// of calls is one event. The live page re-reads the server's history when
// one names it.
type ToolCallsCounted struct {
	Meta
	// Key is the MCPServer's.
	Key Key `json:"key"`
	// Start is when the interval began; it lasted Interval.
	Start    time.Time     `json:"start"`
	Interval time.Duration `json:"interval"`
	// Calls counts the calls that ended in the interval, Errors those of
	// them that failed (an error, or a result with isError).
	Calls  int `json:"calls"`
	Errors int `json:"errors,omitempty"`
}

func (ToolCallsCounted) EventType() string  { return TypeToolCallsCounted }
func (e ToolCallsCounted) ResourceKey() Key { return e.Key }
