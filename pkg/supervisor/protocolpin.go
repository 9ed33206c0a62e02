package supervisor

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/musterd/musterd/pkg/events"
)

// An operator may pin the protocol version musterd asks a server for, for a
// server whose implementation of the newer generation misbehaves: musterd
// then speaks the older one to it, on its shared session and on every
// lane (lanes.go), whatever the generation of the client a lane serves. A
// pin is a ceiling, not a demand: the server may still answer with an
// older version, as MCP's negotiation allows, and Observed shows what it
// agreed. Unlike ClientSessions a pin changes the connection itself, so a
// change of it restarts the server's session: it joins the hash of the
// spec Ensure compares (pinnedHash), and the instance started carries the
// pin it was hashed with.

// ProtocolVersionAnnotation is the MCPServer annotation that pins the
// protocol version musterd speaks to the server (SetProtocolVersion).
const ProtocolVersionAnnotation = "musterd.io/protocol-version"

// ProtocolNewest is the annotation's value for the default, as is "":
// the newest version the server offers (2026-07-28, falling back to
// 2025-11-25 by itself for a server of the older generation).
const ProtocolNewest = "newest"

// ParseProtocolVersion reads the annotation's value: a protocol version
// the go-sdk client speaks, or "" for ProtocolNewest and "". A bad value
// is an error saying which are good, and "" (the default) with it.
func ParseProtocolVersion(v string) (string, error) {
	if v == "" || v == ProtocolNewest {
		return "", nil
	}
	supported := mcp.SupportedProtocolVersions()
	if slices.Contains(supported, v) {
		return v, nil
	}
	return "", fmt.Errorf("%q is not %s or a protocol version musterd speaks (%s)", v, ProtocolNewest, strings.Join(supported, ", "))
}

// SetProtocolVersion pins the protocol version musterd asks key's server
// for; "" is the default (ProtocolNewest). It takes effect at the next
// Ensure, which restarts the server's session if the pin changed; lanes
// open stay as they are until they end with it. Stop forgets it.
func (s *Supervisor) SetProtocolVersion(key events.Key, v string) {
	key = key.Canonical()
	s.mu.Lock()
	defer s.mu.Unlock()
	if v == "" {
		delete(s.protocolPins, key)
		return
	}
	if s.protocolPins == nil {
		s.protocolPins = map[events.Key]string{}
	}
	s.protocolPins[key] = v
}

// pinnedHash is the hash Ensure compares for a spec of hash run with pin:
// hash itself without a pin, so that the hashes of unpinned servers are
// the spec's alone, and keyed like it otherwise.
func (s *Supervisor) pinnedHash(hash, pin string) string {
	if pin == "" {
		return hash
	}
	mac := hmac.New(sha256.New, s.hashKey)
	mac.Write([]byte(hash + "\x00protocol-version=" + pin))
	return hex.EncodeToString(mac.Sum(nil)[:8])
}

// pinned caps want at inst's pin, if it has one: versions are dates, so
// the older compares lower.
func (inst *instance) pinned(want string) string {
	if inst.protocolPin != "" && inst.protocolPin < want {
		return inst.protocolPin
	}
	return want
}
