package main

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/musterd/musterd/internal/dextest"
	"github.com/musterd/musterd/internal/mcpfake"
	"github.com/musterd/musterd/pkg/apis/muster/v1alpha1"
)

// A protected server's own view, /mcp/servers/<name>, is each user's: a
// user logged in to it gets the server as their own connection offers it,
// by its own names, and calls it as themself; a user who did not log in
// finds it Auth Required; a logout ends the user's view.
func TestE2EAProtectedServersViewIsEachUsersOwnConnection(t *testing.T) {
	tm := startTeam(t)
	url, _ := mcpfake.ServeHTTP(t, fakeServer(), "-tools", "whoami,report",
		"-authorization-server", tm.dex.Issuer, "-audience", tm.proxyClient, "-ca-file", tm.dex.CAFile, "-scopes", "openid email")
	e := preparedEnv(t, map[string]string{
		"config.yaml":               tm.config(),
		"mcpservers/protected.yaml": mcpServerYAML("protected", "type: streamable-http", "autoStart: true", "url: "+yamlValue(url), "timeout: 10"),
	})
	e.start(t, "-listen", tm.addr, "-extra-ca-file", tm.dex.CAFile)
	e.waitServer(t, "protected", "is Auth Required", func(s serverObject) bool { return s.Status.State == v1alpha1.MCPServerStateAuthRequired })
	r := &loginRig{fsEnv: e, dex: tm.dex}
	as := func(user string) mcpDial {
		return mcpDial{httpClient: &http.Client{Transport: bearerTransport{idTokenOf(t, tm.dex, dextest.ClientMusterd, user)}}}
	}
	view := tm.public + "/mcp/servers/protected"

	alice := connectMCP(t, tm.public+"/mcp", mcpDial{version: "2025-11-25", httpClient: as("alice").httpClient})
	_, err := dialMCP(view, as("alice"))
	require.Error(t, err, "before her login, the server is Auth Required to alice too")
	assert.Contains(t, err.Error(), "Service Unavailable")
	assert.Contains(t, initializeAnswer(t, view, idTokenOf(t, tm.dex, dextest.ClientMusterd, "alice")), "(state Auth Required)")
	r.login(t, alice, "alice")
	aliceIs, isErr := musterCall(t, alice, "x_protected_whoami", nil)
	require.False(t, isErr, aliceIs)

	aliceView := connectMCP(t, view, as("alice"))
	var names []string
	for tool, err := range aliceView.Tools(t.Context(), nil) {
		require.NoError(t, err)
		names = append(names, tool.Name)
	}
	assert.Equal(t, []string{"report", "whoami"}, names, "the server's tools by its own names")
	text, isErr := callTool(t, aliceView, "whoami", nil)
	require.False(t, isErr, text)
	assert.Equal(t, aliceIs, text, "called as alice")
	assert.Equal(t, "mcp-fake", aliceView.InitializeResult().ServerInfo.Name, "as the server answered her connection")

	_, err = dialMCP(view, as("bob"))
	require.Error(t, err, "bob did not log in")
	assert.Contains(t, err.Error(), "Service Unavailable")

	out, isErr := musterCall(t, alice, "core_auth_logout", map[string]any{"server": "protected"})
	require.False(t, isErr, out)
	eventually(t, "alice's view ends with her connection", func() bool {
		_, err := aliceView.CallTool(t.Context(), &mcp.CallToolParams{Name: "whoami"})
		return err != nil
	})
	_, err = dialMCP(view, as("alice"))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "Service Unavailable")
}

// initializeAnswer is the body of the answer to an initialize POSTed to
// url with token.
func initializeAnswer(t *testing.T, url, token string) string {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}`))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return string(body)
}
