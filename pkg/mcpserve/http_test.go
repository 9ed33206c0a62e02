package mcpserve

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// rpcAnswer is a JSON-RPC error answer.
type rpcAnswer struct {
	JSONRPC string `json:"jsonrpc"`
	Error   struct {
		Code    int64  `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// send makes a raw HTTP request and returns the status, the headers and
// the body.
func (h *harness) send(method, path, body string, header map[string]string) (int, http.Header, string) {
	h.t.Helper()
	req, err := http.NewRequest(method, h.url+path, strings.NewReader(body))
	require.NoError(h.t, err)
	if method == http.MethodPost {
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := h.http.Do(req)
	require.NoError(h.t, err)
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	require.NoError(h.t, err)
	return resp.StatusCode, resp.Header, string(data)
}

// rpcError posts body and returns the JSON-RPC error answered.
func (h *harness) rpcError(path, body string, header map[string]string) (int, rpcAnswer) {
	h.t.Helper()
	code, hdr, data := h.send(http.MethodPost, path, body, header)
	assert.Equal(h.t, "application/json", hdr.Get("Content-Type"), data)
	var a rpcAnswer
	require.NoError(h.t, json.Unmarshal([]byte(data), &a), data)
	assert.Equal(h.t, "2.0", a.JSONRPC)
	return code, a
}

const initialize = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2024-11-05","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}`

func TestBadRequestsGetJSONRPCErrorsNamingTheProblem(t *testing.T) {
	h := newHarness(t, func(o *setup) { o.MaxBodyBytes = 4096 })
	for _, path := range []string{PathMCP, PathDirect} {
		for _, c := range []struct {
			body   string
			status int
			code   int64
			want   string
		}{
			{`{"jsonrpc":"2.0","id":1,"method":`, 400, -32700, "parse error: the message ends early"},
			{`{"jsonrpc":"2.0" "id":1}`, 400, -32700, "parse error: invalid character '\"' after object key:value pair at offset"},
			{`{"jsonrpc":"2.0","id":1,"method":"ping"} trailing`, 400, -32700, "parse error: unexpected data after the message"},
			{``, 400, -32600, "invalid request: the body is empty"},
			{`42`, 400, -32600, "invalid request: the body is an integer, not a JSON-RPC message object"},
			{`{"id":1,"method":"ping"}`, 400, -32600, `invalid request: "jsonrpc" is missing: it must be "2.0"`},
			{`{"jsonrpc":"1.0","id":1,"method":"ping"}`, 400, -32600, `invalid request: "jsonrpc" must be "2.0", not "1.0"`},
			{`{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}`, 400, -32600, `invalid request: "id" must be a string or an integer, not an object`},
			{`{"jsonrpc":"2.0","id":1,"method":7}`, 400, -32600, `invalid request: "method" must be a non-empty string, not 7`},
			{`{"jsonrpc":"2.0","id":1,"method":"ping","params":"x"}`, 400, -32600, `invalid request: "params" must be an object, not a string`},
			{`{"jsonrpc":"2.0","id":1}`, 400, -32600, `invalid request: a message needs a "method"`},
			{`[]`, 400, -32600, "invalid request: the batch is empty"},
			{`[1]`, 400, -32600, "invalid request: batch item 0 is an integer"},
			{`{"jsonrpc":"2.0","id":1,"method":"ping","params":{"pad":"` + strings.Repeat("x", 5000) + `"}}`, 413, codeTooLarge, "request body exceeds the bound of 4096 bytes"},
		} {
			status, a := h.rpcError(path, c.body, nil)
			assert.Equal(t, c.status, status, "%s %.60s", path, c.body)
			assert.Equal(t, c.code, a.Error.Code, "%s %.60s", path, c.body)
			assert.Contains(t, a.Error.Message, c.want, "%s %.60s", path, c.body)
		}
	}

	// A session ID that does not exist.
	status, a := h.rpcError(PathMCP, `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`, map[string]string{sessionHeader: "no-such-session"})
	assert.Equal(t, http.StatusNotFound, status)
	assert.Equal(t, int64(codeUnknownSession), a.Error.Code)
	assert.Equal(t, `unknown session ID "no-such-session": the session expired or was closed, or musterd restarted; initialize a new session`, a.Error.Message)

	// An unknown method, in a real session: the go-sdk answers it.
	code, hdr, _ := h.send(http.MethodPost, PathMCP, initialize, nil)
	require.Equal(t, http.StatusOK, code)
	session := hdr.Get(sessionHeader)
	require.NotEmpty(t, session)
	code, _, _ = h.send(http.MethodPost, PathMCP, `{"jsonrpc":"2.0","method":"notifications/initialized"}`, map[string]string{sessionHeader: session})
	require.Equal(t, http.StatusAccepted, code)
	status, a = h.rpcError(PathMCP, `{"jsonrpc":"2.0","id":3,"method":"tools/frobnicate"}`, map[string]string{sessionHeader: session})
	assert.Equal(t, http.StatusBadRequest, status)
	assert.Equal(t, int64(-32601), a.Error.Code)
	assert.Equal(t, `method not found: "tools/frobnicate" unsupported`, a.Error.Message)

	// The daemon is not hurt: the next session works.
	cs := h.connect(PathMCP, musterProtocol, nil)
	assert.Len(t, listNamesOf(t, cs), len(metaToolNames))
	assert.Equal(t, 13.0*2, h.counter(h.srv.metrics.rejected.WithLabelValues("parse_error"))+h.counter(h.srv.metrics.rejected.WithLabelValues("invalid_request")),
		"each rejected body is counted, the one over the bound aside")
}

func listNamesOf(t *testing.T, cs *mcp.ClientSession) []string { return listNames(t, cs) }

func TestATokenGuardsEveryMCPPathButHealth(t *testing.T) {
	h := newHarness(t, func(o *setup) { o.Token = "s3cret" })
	for _, path := range []string{PathMCP, PathDirect, PathSSE, PathMessage} {
		status, a := h.rpcError(path, initialize, nil)
		assert.Equal(t, http.StatusUnauthorized, status, path)
		assert.Equal(t, int64(codeUnauthorized), a.Error.Code, path)
		assert.Contains(t, a.Error.Message, "bearer token is required", path)
		status, _ = h.rpcError(path, initialize, map[string]string{"Authorization": "Bearer wrong"})
		assert.Equal(t, http.StatusUnauthorized, status, path)
	}
	code, _, _ := h.send(http.MethodGet, PathMCP, "", nil)
	assert.Equal(t, http.StatusUnauthorized, code, "even the plain GET")
	code, _, body := h.send(http.MethodGet, PathHealth, "", nil)
	assert.Equal(t, http.StatusOK, code)
	assert.Equal(t, `{"status":"ok"}`, body)

	authed := &http.Client{Transport: bearerTransport{token: "s3cret", next: h.http.Transport}}
	cs := h.connectWith(authed, PathMCP, musterProtocol, nil)
	assert.Len(t, listNames(t, cs), len(metaToolNames))
}

type bearerTransport struct {
	token string
	next  http.RoundTripper
}

func (b bearerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.next.RoundTrip(r)
}

func TestAFollowerAnswersWithTheLeader(t *testing.T) {
	leader := "musterd-7d9f-abcde"
	h := newHarness(t, func(o *setup) { o.Leader = func() (string, bool) { return leader, false } })
	for _, path := range []string{PathMCP, PathDirect, PathSSE} {
		status, a := h.rpcError(path, initialize, nil)
		assert.Equal(t, http.StatusServiceUnavailable, status, path)
		assert.Equal(t, int64(codeNotLeader), a.Error.Code)
		assert.Equal(t, "this musterd replica is not the leader and runs no MCP server; the leader is musterd-7d9f-abcde: connect to it", a.Error.Message)
	}
	leader = ""
	_, a := h.rpcError(PathMCP, initialize, nil)
	assert.Contains(t, a.Error.Message, "no leader is known yet")
}

func TestAPlainGETAnswersAsMustersCLIExpects(t *testing.T) {
	h := newHarness(t, nil)
	for _, path := range []string{PathMCP, PathDirect} {
		code, hdr, body := h.send(http.MethodGet, path, "", nil)
		assert.Equal(t, http.StatusOK, code, path)
		assert.Equal(t, "application/json", hdr.Get("Content-Type"))
		assert.JSONEq(t, `{"status":"ok","server":"muster-aggregator","version":"1.2.3"}`, body)
	}
	code, _, body := h.send(http.MethodGet, PathHealth, "", nil)
	assert.Equal(t, http.StatusOK, code)
	assert.Equal(t, `{"status":"ok"}`, body)
}

func TestMustersViewOverSSE(t *testing.T) {
	h := newHarness(t, nil)
	h.backend.setTools(echoTool("x_fake_echo"))
	h.srv.Refresh()
	c := mcp.NewClient(&mcp.Implementation{Name: "sse-client", Version: "0"}, nil)
	cs, err := c.Connect(context.Background(), &mcp.SSEClientTransport{Endpoint: h.url + PathSSE, HTTPClient: h.http}, nil)
	require.NoError(t, err)
	defer cs.Close()
	assert.Equal(t, metaToolNames, listNames(t, cs))
	res := call(t, cs, "call_tool", map[string]any{"name": "x_fake_echo", "arguments": map[string]any{"message": "over sse"}})
	assert.JSONEq(t, `{"isError":false,"content":[{"type":"text","text":"x_fake_echo: over sse"}],"structuredContent":{"echoed":"over sse"}}`, text(t, res))

	// /message serves the same sessions, as muster's clients post there.
	status, a := h.rpcError(PathMessage+"?sessionid=nope", `{"jsonrpc":"2.0","id":1,"method":"ping"}`, nil)
	assert.Equal(t, http.StatusNotFound, status)
	assert.Equal(t, `unknown session ID "nope": the session expired or was closed, or musterd restarted; initialize a new session`, a.Error.Message)
}

// readEvents reads SSE data lines from r and sends each on out.
func readEvents(r io.Reader, out chan<- string) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			out <- data
		}
	}
	close(out)
}
