package mcpserve

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Two generations of the protocol on one endpoint. The older one (up to
// 2025-11-25) opens a session with initialize and names it in every
// request after (Mcp-Session-Id); the newest (2026-07-28, SEP-2575) has no
// handshake and no session: each POST carries the protocol version in its
// MCP-Protocol-Version header and in its params' _meta. The go-sdk serves
// the newest only on a stateless handler, and the older one's sessions
// only on a stateful one, so each streamable view has both, over the same
// mcp.Server (the same tools, resources and prompts), and each request
// goes to the handler of the generation it speaks.

// newestProtocol is the first version of the newest generation.
const newestProtocol = "2026-07-28"

// protocolVersionHeader is the streamable transport's version header.
const protocolVersionHeader = "Mcp-Protocol-Version"

// statelessOpts are the options of a view's stateless handler: a request's
// handler is cancelled when its POST ends (there is no other way to cancel
// it in the newest protocol).
func (s *Server) statelessOpts() *mcp.StreamableHTTPOptions {
	return &mcp.StreamableHTTPOptions{
		Stateless:                    true,
		PropagateRequestCancellation: true,
		MaxRequestBodyBytes:          s.opts.MaxBodyBytes,
		Logger:                       s.log,
	}
}

// generations sends each request to the handler of its generation:
// stateless, a POST of the newest (newGeneration); stateful, all else.
// The guard has read the body already: peeking at it costs no read.
func generations(stateful, stateless http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if newGeneration(r) {
			stateless.ServeHTTP(w, r)
			return
		}
		stateful.ServeHTTP(w, r)
	})
}

// newGeneration reports whether r speaks the newest generation, as its
// backward-compatibility rules tell the two apart: a POST that names no
// session and says so in its MCP-Protocol-Version header (an initialize
// so sent is the newest generation's, which has none: the stateless
// handler answers 404, method not found); or, with no such header, that
// is not an initialize (which opens an older session whatever version it
// asks for) and either carries the newest version in its params' _meta
// (the stateless handler answers that the header is missing) or is
// server/discover (which a client of either generation may send first:
// the stateless handler lists every version spoken). A batch is the older
// generation's: the newest has none.
func newGeneration(r *http.Request) bool {
	if r.Method != http.MethodPost || r.Header.Get(sessionHeader) != "" {
		return false
	}
	if r.Header.Get(protocolVersionHeader) >= newestProtocol {
		return true
	}
	var msg struct {
		Method string `json:"method"`
		Params struct {
			Meta map[string]any `json:"_meta"`
		} `json:"params"`
	}
	if r.Body == nil {
		return false
	}
	body, err := io.ReadAll(r.Body)
	r.Body = io.NopCloser(bytes.NewReader(body))
	if err != nil || json.Unmarshal(body, &msg) != nil {
		return false // a batch, or what the stateful handler answers
	}
	switch msg.Method {
	case "initialize", "notifications/initialized":
		return false
	case "server/discover":
		return true
	}
	v, _ := msg.Params.Meta[mcp.MetaKeyProtocolVersion].(string)
	return v >= newestProtocol
}

// newGenerationSession reports whether ss is the go-sdk's session of one
// request of the newest generation: no ID, the version in its request's
// _meta. Such a request carries no peer.Peer: a peer stands for a client
// session, which the servers' sessions on a client's behalf (package
// supervisor's lanes) last as long as; a sessionless client would get one
// per request (a stdio server started for each call), and the go-sdk
// refuses a server's requests to it anyway (the newest protocol has
// InputRequiredResult instead). Its calls use the server's shared session.
func newGenerationSession(ss *mcp.ServerSession) bool {
	if ss.ID() != "" {
		return false
	}
	p := ss.InitializeParams()
	return p != nil && p.ProtocolVersion >= newestProtocol
}
