package supervisor_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/musterd/musterd/pkg/peer"
	"github.com/musterd/musterd/pkg/supervisor"
)

func TestParseProtocolVersion(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"":           "",
		"newest":     "",
		"2026-07-28": "2026-07-28",
		"2025-11-25": "2025-11-25",
		"2025-06-18": "2025-06-18",
		"2024-11-05": "2024-11-05",
	} {
		got, err := supervisor.ParseProtocolVersion(in)
		require.NoError(t, err, in)
		assert.Equal(t, want, got, in)
	}
	for _, bad := range []string{"2025-11-26", "latest", "Newest", " 2025-11-25", "2027-01-01"} {
		got, err := supervisor.ParseProtocolVersion(bad)
		require.Error(t, err, bad)
		assert.Empty(t, got, "%q: the default applies", bad)
		assert.Contains(t, err.Error(), `"`+bad+`" is not newest or a protocol version musterd speaks`)
		assert.Contains(t, err.Error(), "2025-11-25", "it says which are")
	}
}

// protocolOf asks the server of k, through ctx's client if any, which
// protocol version its session agreed to.
func protocolOf(t *testing.T, h *harness, ctx context.Context, k string) string {
	t.Helper()
	text, err := callText(t, h.sup, ctx, k, "protocol", nil)
	require.NoError(t, err)
	return text
}

// A server pinned to the older generation is spoken to in it, though it
// offers the newer; the pin's change restarts its session (a new
// process), a repeated Ensure does not, and Stop forgets it.
func TestAPinnedServerIsSpokenToInItsVersionAndAChangedPinRestartsIt(t *testing.T) {
	t.Parallel()
	h := newHarness(t, supervisor.Options{})
	k := key("pinned")
	spec := fake("-tools", "protocol")

	h.sup.SetProtocolVersion(k, "2025-11-25")
	obs := h.ensure(t, k, spec)
	require.Equal(t, "2025-11-25", obs.ProtocolVersion(), "the pin holds though the server offers 2026-07-28")
	assert.Equal(t, "2025-11-25", protocolOf(t, h, t.Context(), "pinned"), "as the server has it")
	first := obs.PID

	obs = h.ensure(t, k, spec)
	assert.Equal(t, first, obs.PID, "the same pin again restarts nothing")

	h.sup.SetProtocolVersion(k, "2025-06-18")
	obs = h.ensure(t, k, spec)
	assert.Equal(t, "2025-06-18", obs.ProtocolVersion())
	assert.NotEqual(t, first, obs.PID, "a changed pin restarts the server's session")
	second := obs.PID

	h.sup.SetProtocolVersion(k, "")
	obs = h.ensure(t, k, spec)
	assert.Equal(t, "2026-07-28", obs.ProtocolVersion(), "unpinned: the newest the server offers")
	assert.NotEqual(t, second, obs.PID, "and unpinning restarts it too")

	h.sup.SetProtocolVersion(k, "2025-11-25")
	require.NoError(t, h.sup.Stop(t.Context(), k))
	obs = h.ensure(t, k, spec)
	assert.Equal(t, "2026-07-28", obs.ProtocolVersion(), "Stop forgot the pin: whoever pins sets it again before Ensure")
}

// A pin is a ceiling: a server that offers only older versions still
// negotiates down from it, and a pin of the newest is the default.
func TestAPinIsACeilingNotADemand(t *testing.T) {
	t.Parallel()
	h := newHarness(t, supervisor.Options{})
	h.sup.SetProtocolVersion(key("older"), "2025-11-25")
	obs := h.ensure(t, key("older"), fake("-tools", "protocol", "-protocols", "2025-06-18"))
	assert.Equal(t, "2025-06-18", obs.ProtocolVersion(), "the server's own answer stands")

	h.sup.SetProtocolVersion(key("newest"), "2026-07-28")
	obs = h.ensure(t, key("newest"), fake("-tools", "protocol"))
	assert.Equal(t, "2026-07-28", obs.ProtocolVersion())
}

// A lane of a pinned server is held to the pin, even for a client of the
// newer generation, whose lane would otherwise speak it.
func TestALaneOfAPinnedServerSpeaksThePinnedVersion(t *testing.T) {
	t.Parallel()
	h := newHarness(t, supervisor.Options{})
	for name, pin := range map[string]string{"lane-pinned": "2025-11-25", "lane-free": ""} {
		h.sup.SetClientSessions(key(name), supervisor.ClientSessionsPerClient)
		h.sup.SetProtocolVersion(key(name), pin)
		h.ensure(t, key(name), fake("-tools", "protocol"))
		carol := newerPeer{newFakePeer("carol-"+name, everything)}
		text := protocolOf(t, h, peer.With(t.Context(), carol), name)
		require.Equal(t, 1, h.sup.Lanes(key(name)), "%s: the call went through carol's lane", name)
		want := pin
		if want == "" {
			want = "2026-07-28"
		}
		assert.Equal(t, want, text, name)
	}
}
