// Package jsoneq compares values as a JSON client sees them.
//
// Place: a leaf, used where a listing from an MCP server (tools,
// resources, prompts) is compared with the one before it to tell whether
// clients must hear of a change. Two values whose encodings are equal are
// the same to every client, whatever their Go types (a schema held as a
// map or as json.RawMessage, say).
package jsoneq

import (
	"bytes"
	"encoding/json"
)

// Equal reports whether a and b encode to the same JSON. A value that does
// not encode equals nothing, itself included: a listing that cannot be
// encoded is taken as changed, never as unchanged.
func Equal(a, b any) bool {
	ja, errA := json.Marshal(a)
	jb, errB := json.Marshal(b)
	return errA == nil && errB == nil && bytes.Equal(ja, jb)
}
