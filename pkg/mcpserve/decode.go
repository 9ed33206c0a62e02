package mcpserve

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/musterd/musterd/pkg/tooldef"
)

// rpcError is a JSON-RPC error answered before the go-sdk sees a request.
type rpcError struct {
	code    int64
	message string
}

func (e *rpcError) Error() string { return e.message }

// checkBody checks that a POST body is a JSON-RPC 2.0 message, or a batch
// of them (protocol versions before 2025-06-18), and says exactly what is
// wrong when it is not: the go-sdk then handles only well-formed messages,
// and a client gets a JSON-RPC error naming the problem rather than a
// generic one.
func checkBody(body []byte) *rpcError {
	trimmed := bytes.TrimSpace(body)
	if len(trimmed) == 0 {
		return &rpcError{jsonrpc.CodeInvalidRequest, "invalid request: the body is empty; POST one JSON-RPC 2.0 message"}
	}
	var v any
	dec := json.NewDecoder(bytes.NewReader(trimmed))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		return &rpcError{jsonrpc.CodeParseError, "parse error: " + describeJSONError(err, trimmed)}
	}
	if rest := bytes.TrimSpace(trimmed[dec.InputOffset():]); len(rest) > 0 {
		// Not dec.More, which is false for a stray "}" (fuzzing found it).
		return &rpcError{jsonrpc.CodeParseError, fmt.Sprintf("parse error: unexpected data after the message at offset %d", dec.InputOffset())}
	}
	switch m := v.(type) {
	case map[string]any:
		return checkMessage(m, "")
	case []any:
		if len(m) == 0 {
			return &rpcError{jsonrpc.CodeInvalidRequest, "invalid request: the batch is empty"}
		}
		for i, item := range m {
			obj, ok := item.(map[string]any)
			if !ok {
				return &rpcError{jsonrpc.CodeInvalidRequest, fmt.Sprintf("invalid request: batch item %d is %s, not a JSON-RPC message object", i, tooldef.Article(tooldef.JSONType(item)))}
			}
			if err := checkMessage(obj, fmt.Sprintf("batch item %d: ", i)); err != nil {
				return err
			}
		}
		return nil
	}
	return &rpcError{jsonrpc.CodeInvalidRequest, fmt.Sprintf("invalid request: the body is %s, not a JSON-RPC message object", tooldef.Article(tooldef.JSONType(v)))}
}

// checkMessage checks one message: a request, a notification or a
// response.
func checkMessage(m map[string]any, where string) *rpcError {
	bad := func(format string, a ...any) *rpcError {
		return &rpcError{jsonrpc.CodeInvalidRequest, "invalid request: " + where + fmt.Sprintf(format, a...)}
	}
	if v, ok := m["jsonrpc"]; !ok {
		return bad(`"jsonrpc" is missing: it must be "2.0"`)
	} else if v != "2.0" {
		return bad(`"jsonrpc" must be "2.0", not %s`, short(v))
	}
	if id, ok := m["id"]; ok {
		switch id := id.(type) {
		case string:
		case json.Number:
			if f, err := id.Float64(); err != nil || f != math.Trunc(f) || math.Abs(f) > 1<<53 {
				return bad(`"id" must be a string or an integer, not %s`, id)
			}
		default:
			return bad(`"id" must be a string or an integer, not %s`, tooldef.Article(tooldef.JSONType(id)))
		}
	}
	method, hasMethod := m["method"]
	if hasMethod {
		if name, ok := method.(string); !ok || name == "" {
			return bad(`"method" must be a non-empty string, not %s`, short(method))
		}
		if p, ok := m["params"]; ok && p != nil {
			switch p.(type) {
			case map[string]any, []any:
			default:
				return bad(`"params" must be an object, not %s`, tooldef.Article(tooldef.JSONType(p)))
			}
		}
		return nil
	}
	_, hasResult := m["result"]
	_, hasError := m["error"]
	if _, hasID := m["id"]; !hasID || hasResult == hasError {
		return bad(`a message needs a "method" (a request or notification), or an "id" with a "result" or an "error" (a response)`)
	}
	return nil
}

// describeJSONError says where and why data is not JSON.
func describeJSONError(err error, data []byte) string {
	var syntax *json.SyntaxError
	if errors.As(err, &syntax) {
		return fmt.Sprintf("%v at offset %d", syntax, syntax.Offset)
	}
	if errors.Is(err, io.ErrUnexpectedEOF) {
		return fmt.Sprintf("the message ends early, after %d bytes", len(data))
	}
	return err.Error()
}

// short spells a JSON value for an error, cut to 40 bytes.
func short(v any) string {
	data, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprintf("%v", v)
	}
	if len(data) > 40 {
		return string(data[:40]) + "…"
	}
	return string(data)
}
