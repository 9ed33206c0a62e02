package client_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"golang.org/x/oauth2"

	"github.com/musterd/musterd/internal/dextest"
	"github.com/musterd/musterd/internal/mcpfake"
	"github.com/musterd/musterd/pkg/oauth/client"
)

var fakeBin string

func TestMain(m *testing.M) { mcpfake.Main(m, &fakeBin) }

// connectMCP opens an MCP session to url whose requests carry ts's
// token, as a user's own connection to a protected server does.
func connectMCP(ctx context.Context, url string, ts oauth2.TokenSource) (*mcp.ClientSession, error) {
	hc := &http.Client{Timeout: 30 * time.Second}
	if ts != nil {
		hc.Transport = &oauth2.Transport{Source: ts, Base: http.DefaultTransport}
	}
	c := mcp.NewClient(&mcp.Implementation{Name: "oauth-client-test", Version: "v0"}, nil)
	return c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: hc, MaxRetries: -1}, nil)
}

// A real protected MCP server (mcp-fake guarding its tools with Dex's
// tokens): refused without a token; after the login through musterd,
// discovered from its own PRM, the user's TokenSource opens it and its
// tools answer.
func TestALoginOpensARealProtectedMCPServer(t *testing.T) {
	r := newRig(t, rigOptions{})
	url, _ := mcpfake.ServeHTTP(t, fakeBin, "-tools", "secret",
		"-authorization-server", r.dex.Issuer, "-ca-file", r.dex.CAFile, "-audience", dextest.ClientMusterd, "-scopes", "openid email")

	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	if s, err := connectMCP(ctx, url, nil); err == nil {
		s.Close()
		t.Fatal("the protected server let a client in without a token")
	}

	// No challenge at hand (as after a restart): discovery finds the
	// PRM at the path form.
	s := client.Server{Name: "secret-server", URL: url}
	cb := r.login(t, "user:bob", "bob", s)
	if !strings.Contains(cb.RawQuery, "code=") {
		t.Fatalf("Dex sent the browser to %s", cb.Redacted())
	}
	if status, page := get(t, cb.String()); status != http.StatusOK {
		t.Fatalf("callback: %d %s", status, page)
	}
	issuer, err := r.c.Issuer(ctx, s)
	if err != nil || issuer != r.dex.Issuer {
		t.Fatalf("Issuer: %q %v", issuer, err)
	}
	ts, ok := r.c.TokenSource("user:bob", issuer)
	if !ok {
		t.Fatal("no token after the login")
	}
	session, err := connectMCP(ctx, url, ts)
	if err != nil {
		t.Fatalf("connect with bob's token: %v", err)
	}
	defer session.Close()
	res, err := session.CallTool(ctx, &mcp.CallToolParams{Name: "secret", Arguments: map[string]any{"x": 1}})
	if err != nil || res.IsError {
		t.Fatalf("call: %v %+v", err, res)
	}
	if text := res.Content[0].(*mcp.TextContent).Text; text != `secret {"x":1}` {
		t.Errorf("the tool answered %q", text)
	}
}
