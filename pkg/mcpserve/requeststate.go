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
// (MCP 2026-07-28's input-required result) gives the client an opaque
// request state to send back with its answers. musterd relays it sealed:
// encrypted and authenticated with a key of the process's own
// (AES-256-GCM), bound to the call it was issued for (the view, the tool,
// the client's session if it has one, and who called: a digest of the
// Authorization header), valid for requestStateTTL and once. A client
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
var errRequestState = errors.New("requestState is not one musterd issued for this call, or it was used or expired: call the tool again without it")

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

// binding identifies the call a state is for.
func binding(view, tool, session, authorization string) string {
	sum := sha256.Sum256([]byte(view + "\x00" + tool + "\x00" + session + "\x00" + authorization))
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

// callBinding is what a state issued for req's call is bound to.
func callBinding(view string, req *mcp.CallToolRequest) string {
	var session, authorization string
	if req.Extra != nil && req.Extra.Header != nil {
		session = req.Extra.Header.Get(sessionHeader)
		authorization = req.Extra.Header.Get("Authorization")
	}
	return binding(view, req.Params.Name, session, authorization)
}

// retryRound puts a retry's answers in ctx for the server (peer.Round),
// with the server's own state opened from the sealed one. A call that is
// no retry is left as it is.
func (s *Server) retryRound(ctx context.Context, view string, req *mcp.CallToolRequest) (context.Context, error) {
	p := req.Params
	if p.RequestState == "" && len(p.InputResponses) == 0 {
		return ctx, nil
	}
	state := ""
	if p.RequestState != "" {
		opened, err := s.states.open(p.RequestState, callBinding(view, req))
		if err != nil {
			return ctx, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: err.Error()}
		}
		state = opened
	}
	return peer.WithRound(ctx, peer.Round{Responses: p.InputResponses, State: state}), nil
}

// sealRound seals the request state of a result that asks the client for
// input, for the call req.
func (s *Server) sealRound(res *mcp.CallToolResult, view string, req *mcp.CallToolRequest) *mcp.CallToolResult {
	if res == nil || res.RequestState == "" {
		return res
	}
	out := *res // a copy, input-required result type and all: the server's result is not changed
	out.RequestState = s.states.seal(res.RequestState, callBinding(view, req))
	return &out
}
