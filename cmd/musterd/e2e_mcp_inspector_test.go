package main

// /mcp/direct driven by a client nobody here wrote: the MCP Inspector's CLI
// mode (npm's @modelcontextprotocol/inspector, pinned by `make
// npm-clients`), listing and calling the tools of real servers (bin/mcp-fake
// and npm's server-everything) through the real musterd binary.

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"

	"github.com/musterd/musterd/internal/npmtest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// inspector runs the Inspector's CLI against url with args and returns its
// output (stdout and stderr together: it prints a failure to stderr) and
// whether it exited 0. A run is bounded, so that a hang fails the test.
func inspector(t *testing.T, bin, url string, args ...string) (string, bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), e2eDeadline)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, append([]string{"--cli", url, "--transport", "http"}, args...)...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	require.NoError(t, ctx.Err(), "mcp-inspector %q did not finish\n%s", args, out.String())
	if err != nil {
		var exit *exec.ExitError
		require.ErrorAs(t, err, &exit, "mcp-inspector %q: %s", args, out.String())
	}
	return out.String(), err == nil
}

// bearerTransport adds the token to every request, as a client configured
// with "Authorization: Bearer …" does.
type bearerTransport struct{ token string }

func (b bearerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}

func TestE2EInspectorListsAndCallsToolsOnTheDirectView(t *testing.T) {
	bin := npmtest.Inspector(t)
	everything := npmtest.ServerEverything(t)
	// With a token, as a remote or shared daemon runs: the Inspector sends
	// it as a header, and without it gets nothing.
	const token = "inspector-e2e-token"
	tokenFile := filepath.Join(t.TempDir(), "token")
	require.NoError(t, os.WriteFile(tokenFile, []byte(token+"\n"), 0o600))
	e := startFS(t, "-token-file", tokenFile)
	marker := newMarker()
	e.write(t, "mcpservers/fake.yaml", mcpServerYAML("fake", append(stdioSpec("-tools", "echo,"+marker), "toolPrefix: fk")...))
	e.write(t, "mcpservers/everything.yaml", mcpServerYAML("everything", "type: stdio", "autoStart: true", "command: "+yamlValue(everything), `args: ["stdio"]`, "timeout: 60"))

	// The go-sdk client only waits for the set to be served; the checks
	// below are the Inspector's.
	cs := connectMCP(t, "http://"+e.addr+"/mcp/direct", mcpDial{httpClient: &http.Client{Transport: bearerTransport{token}}})
	eventually(t, "/mcp/direct serves both servers' tools", func() bool {
		names := toolNames(t, cs)
		return slices.Contains(names, "x_fk_"+marker) && slices.Contains(names, "x_everything_get-sum")
	})

	url := "http://" + e.addr + "/mcp/direct"
	auth := []string{"--header", "Authorization: Bearer " + token}

	// Without the token: refused, and the Inspector says so.
	out, ok := inspector(t, bin, url, "--method", "tools/list")
	assert.False(t, ok, out)
	assert.Contains(t, out, "a valid bearer token is required", out)

	// tools/list: every tool natively, with its real schema.
	out, ok = inspector(t, bin, url, append(auth, "--method", "tools/list")...)
	require.True(t, ok, out)
	var listed struct {
		Tools []struct {
			Name        string `json:"name"`
			InputSchema struct {
				Type       string                     `json:"type"`
				Properties map[string]json.RawMessage `json:"properties"`
			} `json:"inputSchema"`
		} `json:"tools"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &listed), out)
	byName := map[string]int{}
	for i, tool := range listed.Tools {
		byName[tool.Name] = i
	}
	for _, want := range []string{"x_fk_echo", "x_fk_" + marker, "x_everything_get-sum", "x_everything_echo", "core_mcpserver_list", "core_reconcile_status"} {
		assert.Contains(t, byName, want, "tools/list through the Inspector")
	}
	if i, ok := byName["x_everything_get-sum"]; ok {
		schema := listed.Tools[i].InputSchema
		assert.Equal(t, "object", schema.Type)
		assert.Contains(t, schema.Properties, "a", "server-everything's own schema, passed through")
		assert.Contains(t, schema.Properties, "b")
	}
	assert.NotContains(t, byName, "call_tool", "the meta-tools are muster's view, not this one")

	// tools/call with k=v arguments: mcp-fake echoes them back as it got them.
	out, ok = inspector(t, bin, url, append(auth, "--method", "tools/call", "--tool-name", "x_fk_"+marker, "--tool-arg", "message=hi", "n=3")...)
	require.True(t, ok, out)
	var res struct {
		Content []struct{ Type, Text string } `json:"content"`
		IsError bool                          `json:"isError"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &res), out)
	require.Len(t, res.Content, 1, out)
	assert.False(t, res.IsError)
	assert.Equal(t, marker+` {"message":"hi","n":3}`, res.Content[0].Text)

	// server-everything's own tools, with its own result.
	out, ok = inspector(t, bin, url, append(auth, "--method", "tools/call", "--tool-name", "x_everything_get-sum", "--tool-arg", "a=2", "b=40")...)
	require.True(t, ok, out)
	res.Content = nil
	require.NoError(t, json.Unmarshal([]byte(out), &res), out)
	require.NotEmpty(t, res.Content, out)
	assert.False(t, res.IsError)
	assert.Contains(t, res.Content[0].Text, "42")

	// A core tool: muster's shape of the servers it runs.
	out, ok = inspector(t, bin, url, append(auth, "--method", "tools/call", "--tool-name", "core_mcpserver_list")...)
	require.True(t, ok, out)
	res.Content = nil
	require.NoError(t, json.Unmarshal([]byte(out), &res), out)
	require.NotEmpty(t, res.Content, out)
	var servers struct {
		MCPServers []struct{ Name, State string } `json:"mcpServers"`
	}
	require.NoError(t, json.Unmarshal([]byte(res.Content[0].Text), &servers), res.Content[0].Text)
	assert.ElementsMatch(t, []struct{ Name, State string }{{"everything", "Running"}, {"fake", "Running"}}, servers.MCPServers)

	// A tool nobody offers: the Inspector fails, naming it.
	out, ok = inspector(t, bin, url, append(auth, "--method", "tools/call", "--tool-name", "x_nobody_home")...)
	assert.False(t, ok, out)
	assert.Contains(t, out, `unknown tool "x_nobody_home"`)

	// The server's file deleted: the Inspector's next list no longer has
	// its tools.
	e.remove(t, "mcpservers/fake.yaml")
	eventually(t, "fake's tools are gone from /mcp/direct", func() bool {
		return !slices.Contains(toolNames(t, cs), "x_fk_echo")
	})
	out, ok = inspector(t, bin, url, append(auth, "--method", "tools/list")...)
	require.True(t, ok, out)
	assert.NotContains(t, out, `"x_fk_echo"`)
	assert.Contains(t, out, `"x_everything_get-sum"`)
}
