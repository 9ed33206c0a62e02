package mcpserve

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// FuzzCheckBody drives the endpoint's request decoding with arbitrary
// bodies: it never panics, every rejection is a JSON-RPC error code with a
// message, and a single message it accepts is one the go-sdk decodes too,
// so a body is never let through to fail later without a named cause.
func FuzzCheckBody(f *testing.F) {
	for _, seed := range []string{
		initialize,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":"a","method":"tools/call","params":{"name":"call_tool","arguments":{"name":"x_fake_echo"}}}`,
		`{"jsonrpc":"2.0","id":7,"result":{}}`,
		`[{"jsonrpc":"2.0","id":1,"method":"ping"}]`,
		`{"jsonrpc":"2.0","id":1,"method":`, `{"jsonrpc":"1.0"}`, `[]`, `42`, ``, `{"jsonrpc":"2.0","id":1e400,"method":"x"}`,
		`{"jsonrpc":"2.0","id":1.5,"method":"x"}`, `{"jsonrpc":"2.0","id":null,"method":"x"}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		err := checkBody(body)
		if err != nil {
			if err.code == 0 || err.message == "" {
				t.Fatalf("rejection without a code or message: %+v", err)
			}
			return
		}
		trimmed := bytes.TrimSpace(body)
		if len(trimmed) > 0 && trimmed[0] == '{' {
			if _, derr := jsonrpc.DecodeMessage(trimmed); derr != nil {
				t.Fatalf("accepted %q, which the go-sdk rejects: %v", body, derr)
			}
		}
		if !json.Valid(trimmed) {
			t.Fatalf("accepted invalid JSON %q", body)
		}
	})
}
