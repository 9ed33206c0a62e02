package mcpserve

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/musterd/musterd/pkg/peer"
)

// A server that needs its client's input before it can answer a call
// (MCP 2026-07-28's input-required result, to a tools/call, prompts/get or
// resources/read) gives the client an opaque request state to send back
// with its answers. musterd relays it sealed: encrypted and authenticated
// with a key of the process's own (AES-256-GCM), bound to the call it was
// issued for (the view; the kind of call and the tool's or prompt's name
// or the resource's URI; the client's session if it has one; and who
// called: a digest of the Authorization header), valid for
// requestStateTTL and once. A client
// therefore cannot forge one, replay one, read the server's own state, or
// use one issued to another session or user. The server's own state comes
// back to it unchanged. A state sealed by another process (a restart,
// another replica) is refused like a forged one: the client starts the
// call again.

// requestStateTTL bounds how long a sealed request state is good for.
const requestStateTTL = 10 * time.Minute

// requestStatePrefix marks a state musterd sealed.
const requestStatePrefix = "musterd1."

// errRequestState is the one answer to a state that does not open, whatever
// the reason: forged, expired, replayed or another call's.
var errRequestState = errors.New("requestState is not one musterd issued for this call, or it was used or expired: send the request again without it")

// sealer seals and opens request states.
type sealer struct {
	aead cipher.AEAD
	now  func() time.Time

	mu   sync.Mutex
	used map[string]time.Time // the IDs of states opened, until they expire
}

func newSealer() *sealer {
	key := make([]byte, 32)
	_, _ = rand.Read(key) // never fails on supported platforms
	block, err := aes.NewCipher(key)
	if err != nil {
		panic(err) // a 32-byte key always makes a cipher
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		panic(err)
	}
	return &sealer{aead: aead, now: time.Now, used: map[string]time.Time{}}
}

// sealedState is what a sealed request state holds.
type sealedState struct {
	ID      string `json:"i"`
	Binding string `json:"b"`
	Expires int64  `json:"e"` // unix seconds
	State   string `json:"s"` // the server's own
}

// Kinds of call a request state can be issued for: a state issued for one
// kind never opens for another, even of the same name.
const (
	kindTool     = "tool"     // tools/call, by the tool's name
	kindPrompt   = "prompt"   // prompts/get, by the prompt's name
	kindResource = "resource" // resources/read, by the resource's URI
)

// binding identifies the call a state is for: the view, the kind of call
// and what it names (a tool, a prompt, a resource's URI), the client's
// session and who called.
func binding(view, kind, name, session, authorization string) string {
	sum := sha256.Sum256([]byte(view + "\x00" + kind + "\x00" + name + "\x00" + session + "\x00" + authorization))
	return hex.EncodeToString(sum[:])
}

// seal wraps the server's state for the call bound.
func (s *sealer) seal(state, bound string) string {
	id := make([]byte, 16)
	_, _ = rand.Read(id)
	plain, _ := json.Marshal(sealedState{ID: hex.EncodeToString(id), Binding: bound, Expires: s.now().Add(requestStateTTL).Unix(), State: state})
	nonce := make([]byte, s.aead.NonceSize())
	_, _ = rand.Read(nonce)
	sealed := s.aead.Seal(nonce, nonce, plain, []byte(requestStatePrefix))
	return requestStatePrefix + base64.RawURLEncoding.EncodeToString(sealed)
}

// open returns the server's state a sealed one holds, if it was sealed
// here for the call bound, has not expired and was never opened before.
func (s *sealer) open(sealed, bound string) (string, error) {
	raw, ok := strings.CutPrefix(sealed, requestStatePrefix)
	if !ok {
		return "", errRequestState
	}
	data, err := base64.RawURLEncoding.DecodeString(raw)
	if err != nil || len(data) < s.aead.NonceSize() {
		return "", errRequestState
	}
	plain, err := s.aead.Open(nil, data[:s.aead.NonceSize()], data[s.aead.NonceSize():], []byte(requestStatePrefix))
	if err != nil {
		return "", errRequestState
	}
	var st sealedState
	if err := json.Unmarshal(plain, &st); err != nil || st.Binding != bound {
		return "", errRequestState
	}
	now := s.now()
	if now.Unix() > st.Expires {
		return "", errRequestState
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for id, expires := range s.used {
		if now.After(expires) {
			delete(s.used, id)
		}
	}
	if _, seen := s.used[st.ID]; seen {
		return "", errRequestState
	}
	s.used[st.ID] = time.Unix(st.Expires, 0)
	return st.State, nil
}

// stateCall is a call a request state is issued for, or comes back with.
type stateCall struct {
	view, kind, name string
	extra            *mcp.RequestExtra // the request's HTTP headers: its session and Authorization
}

// binding is what a state issued for c is bound to.
func (c stateCall) binding() string {
	var session, authorization string
	if c.extra != nil && c.extra.Header != nil {
		session = c.extra.Header.Get(sessionHeader)
		authorization = c.extra.Header.Get("Authorization")
	}
	return binding(c.view, c.kind, c.name, session, authorization)
}

// toolCall, promptCall and resourceCall are the calls of req on view.
func toolCall(view string, req *mcp.CallToolRequest) stateCall {
	return stateCall{view: view, kind: kindTool, name: req.Params.Name, extra: req.Extra}
}

func promptCall(view string, req *mcp.GetPromptRequest) stateCall {
	return stateCall{view: view, kind: kindPrompt, name: req.Params.Name, extra: req.Extra}
}

func resourceCall(view string, req *mcp.ReadResourceRequest) stateCall {
	return stateCall{view: view, kind: kindResource, name: req.Params.URI, extra: req.Extra}
}

// retryRound puts a retry's answers in ctx for the server (peer.Round),
// with the server's own state opened from the sealed one, state. A call
// that is no retry (neither answers nor state) is left as it is.
func (s *Server) retryRound(ctx context.Context, c stateCall, responses mcp.InputResponseMap, state string) (context.Context, error) {
	if state == "" && len(responses) == 0 {
		return ctx, nil
	}
	opened := ""
	if state != "" {
		var err error
		if opened, err = s.states.open(state, c.binding()); err != nil {
			return ctx, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: err.Error()}
		}
	}
	return peer.WithRound(ctx, peer.Round{Responses: responses, State: opened}), nil
}

// sealResult returns res with its request state (the field state points
// to) sealed for the call c: a copy, input-required result type and all,
// so that the server's result is not changed. A result without a state is
// returned as it is.
func sealResult[R any](s *Server, res *R, state func(*R) *string, c stateCall) *R {
	if res == nil || *state(res) == "" {
		return res
	}
	out := *res
	*state(&out) = s.states.seal(*state(res), c.binding())
	return &out
}

// sealRound seals the request state of a tool's result that asks the
// client for input, for the call req on view.
func (s *Server) sealRound(res *mcp.CallToolResult, view string, req *mcp.CallToolRequest) *mcp.CallToolResult {
	return sealResult(s, res, func(r *mcp.CallToolResult) *string { return &r.RequestState }, toolCall(view, req))
}
