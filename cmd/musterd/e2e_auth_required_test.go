package main

import (
	"context"
	"encoding/json"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/musterd/musterd/internal/mcpfake"
	"github.com/musterd/musterd/pkg/apis/muster/v1alpha1"
)

// A remote server that answers 401 is Auth Required where users look: its
// status and muster's tools. It is settled there, no failure and no retry.
// A restart cannot log anyone in, and says so in muster's words; a spec
// that brings the credential connects.
func TestE2EAProtectedRemoteServerIsAuthRequired(t *testing.T) {
	const token = "e2e-bearer-token-value"
	url, _ := mcpfake.ServeHTTP(t, fakeServer(), "-tools", "secret", "-require-bearer", token)
	e := startFS(t)
	e.write(t, "mcpservers/protected.yaml", mcpServerYAML("protected", "type: streamable-http", "autoStart: true", "url: "+yamlValue(url), "timeout: 10"))
	s := e.waitServer(t, "protected", "is Auth Required", func(s serverObject) bool {
		return s.Status.State == v1alpha1.MCPServerStateAuthRequired && s.Reconcile.State == "Synced"
	})
	assert.Zero(t, s.Status.ConsecutiveFailures, "a 401 is no failure")
	assert.Nil(t, s.Status.NextRetryAfter, "nothing to retry")
	assert.Contains(t, s.Status.LastError, "answered 401 Unauthorized")

	cs := e.mcpClient(t, "/mcp", "2025-11-25", nil)
	out, isErr := musterCall(t, cs, "core_mcpserver_list", nil)
	require.False(t, isErr, out)
	assert.Contains(t, out, `"state":"Auth Required"`)
	out, isErr = musterCall(t, cs, "core_service_restart", map[string]any{"name": "protected"})
	assert.True(t, isErr, out)
	assert.Equal(t, "Service 'protected' requires OAuth authentication.\n\n"+
		"To connect to this server, use the core_auth_login tool:\n  core_auth_login(server=\"protected\")\n\n"+
		"The service start/restart command cannot be used for OAuth-protected servers because authentication is session-scoped.", out)

	e.write(t, "mcpservers/protected.yaml", mcpServerYAML("protected", "type: streamable-http", "autoStart: true", "url: "+yamlValue(url), "timeout: 10",
		"headers: {Authorization: "+yamlValue("Bearer "+token)+"}"))
	e.waitServer(t, "protected", "connects with the token", func(s serverObject) bool {
		return s.Status.State == v1alpha1.MCPServerStateConnected && len(s.Status.Tools) == 1
	})
}

// A remote server behind a private CA connects once -extra-ca-file names
// the CA, and fails its TLS check without it.
func TestE2EExtraCAFileIsTrustedForRemoteServers(t *testing.T) {
	server := mcp.NewServer(&mcp.Implementation{Name: "private", Version: "v1"}, nil)
	server.AddTool(&mcp.Tool{Name: "inside", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{}, nil
		})
	private := httptest.NewTLSServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, nil))
	t.Cleanup(private.Close)
	caFile := filepath.Join(t.TempDir(), "ca.pem")
	require.NoError(t, os.WriteFile(caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: private.Certificate().Raw}), 0o600))
	spec := mcpServerYAML("private", "type: streamable-http", "autoStart: true", "url: "+yamlValue(private.URL), "timeout: 10")

	trusting := startFS(t, "-extra-ca-file", caFile)
	trusting.write(t, "mcpservers/private.yaml", spec)
	trusting.waitServer(t, "private", "connects over TLS", func(s serverObject) bool {
		return s.Status.State == v1alpha1.MCPServerStateConnected && slices.Equal(s.Status.Tools, []string{"x_private_inside"})
	})

	distrusting := startFS(t)
	distrusting.write(t, "mcpservers/private.yaml", spec)
	s := distrusting.waitServer(t, "private", "fails its TLS check", func(s serverObject) bool {
		return s.Status.State == v1alpha1.MCPServerStateFailed
	})
	assert.Contains(t, s.Status.LastError, "certificate signed by unknown authority")
}
