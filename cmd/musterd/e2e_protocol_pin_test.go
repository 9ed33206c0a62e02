package main

// The annotation musterd.io/protocol-version pins the generation musterd
// speaks to a server: the go-sdk's conformance server, which offers
// 2026-07-28, pinned to 2025-11-25 and managed over stdio by the real
// musterd, is spoken to in 2025-11-25, as status and core_mcpserver_get
// show, and its questions still reach a client of 2025-11-25 on the
// client's own session; a change of the annotation restarts the server's
// session, and a bad value is a warning with the default in force.

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/musterd/musterd/internal/conformancetest"
	"github.com/musterd/musterd/pkg/supervisor"
)

func TestE2EAServerPinnedTo20251125IsSpokenToInIt(t *testing.T) {
	bin := conformancetest.BuildEverythingServer(t)
	e := startFS(t)
	declare := func(pin string) {
		e.write(t, "mcpservers/pin.yaml", annotatedServerYAML("pin", map[string]string{
			supervisor.ClientSessionsAnnotation:  string(supervisor.ClientSessionsPerClient),
			supervisor.ProtocolVersionAnnotation: pin,
		}, "type: stdio", "autoStart: true", "command: "+yamlValue(bin), "timeout: 20"))
	}
	declare("2025-11-25")
	s := e.waitServer(t, "pin", "running", func(s serverObject) bool { return s.Status.State == "Running" })
	assert.Equal(t, "2025-11-25", s.Status.ProtocolVersion, "the pin holds though the server offers 2026-07-28")
	assert.Empty(t, s.Status.Warnings)

	direct := e.mcpClient(t, "/mcp/direct", "", nil)
	got, isError := callJSON(t, direct, "core_mcpserver_get", map[string]any{"name": "pin"})
	require.False(t, isError)
	assert.Equal(t, "2025-11-25", got["protocolVersion"], "core_mcpserver_get shows the pinned generation")

	// A client of 2025-11-25 through the server's own view, and through
	// /mcp/direct: the server asks it in a classic elicitation/create, on
	// the client's own session.
	for path, tool := range map[string]string{
		"/mcp/servers/pin": "test_input_required_result_elicitation",
		"/mcp/direct":      "x_pin_test_input_required_result_elicitation",
	} {
		var mu sync.Mutex
		var asked []string
		name := "ada" + strings.ReplaceAll(path, "/", "-")
		cs := e.mcpClient(t, path, "2025-11-25", &mcp.ClientOptions{
			ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
				mu.Lock()
				asked = append(asked, req.Params.Message)
				mu.Unlock()
				return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": name}}, nil
			},
		})
		require.Equal(t, "2025-11-25", cs.InitializeResult().ProtocolVersion)
		text, isError := callTool(t, cs, tool, nil)
		assert.False(t, isError, "%s: %s", path, text)
		assert.Equal(t, "Hello, "+name+"!", text, path)
		mu.Lock()
		assert.Equal(t, []string{"What is your name?"}, asked, "%s: the client was asked, classically", path)
		mu.Unlock()
	}

	// A bad value: a warning, and the default, newest, in force. That is
	// a change of the pin: the server's session starts again.
	declare("2025-13-01")
	s = e.waitServer(t, "pin", "running at the default with a warning", func(s serverObject) bool {
		return s.Status.State == "Running" && s.Status.ProtocolVersion == "2026-07-28" && len(s.Status.Warnings) > 0
	})
	assert.Equal(t, 1, s.Status.RestartCount, "the pin's change restarted the server")
	require.Len(t, s.Status.Warnings, 1)
	assert.Contains(t, s.Status.Warnings[0], `metadata.annotations[musterd.io/protocol-version]: "2025-13-01" is not newest or a protocol version musterd speaks`)
	assert.Contains(t, s.Status.Warnings[0], "; newest applies")
	got, isError = callJSON(t, direct, "core_mcpserver_get", map[string]any{"name": "pin"})
	require.False(t, isError)
	assert.Equal(t, "2026-07-28", got["protocolVersion"])

	// Pinned again: restarted again, in the older generation.
	declare("2025-11-25")
	s = e.waitServer(t, "pin", "running pinned again", func(s serverObject) bool {
		return s.Status.State == "Running" && s.Status.ProtocolVersion == "2025-11-25"
	})
	assert.Equal(t, 2, s.Status.RestartCount)
	assert.Empty(t, s.Status.Warnings)
}
