package types

import "time"

// Calls are an MCPServer's recent tool calls, counted by the router in
// intervals: Calls[i] and Errors[i] are those that ended in the interval
// that began at Start + i×Interval, oldest first, the last being the
// interval running now. Errors are the calls that failed (an error, or a
// result with isError).
type Calls struct {
	Start time.Time `json:"start"`
	// IntervalSeconds is each interval's length.
	IntervalSeconds float64 `json:"intervalSeconds"`
	Calls           []int   `json:"calls"`
	Errors          []int   `json:"errors"`
	// TotalCalls and TotalErrors sum them.
	TotalCalls  int `json:"totalCalls"`
	TotalErrors int `json:"totalErrors"`
}
