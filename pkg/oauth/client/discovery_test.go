package client_test

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/oauthex"

	"github.com/musterd/musterd/internal/dextest"
	"github.com/musterd/musterd/pkg/oauth/client"
)

// prmServer serves the given documents at their paths, JSON, and 404
// elsewhere; its MCP URL is {URL}/mcp.
func prmServer(t *testing.T, docs func(base string) map[string]any) *httptest.Server {
	t.Helper()
	var srv *httptest.Server
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		doc, ok := docs(srv.URL)[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(doc)
	}))
	t.Cleanup(srv.Close)
	return srv
}

func newDexClient(t *testing.T, dex *dextest.Dex) *client.Client {
	t.Helper()
	c, err := client.New(client.Options{PublicURL: "http://127.0.0.1:1", HTTPClient: dex.HTTPClient, ClientID: dextest.ClientMusterd})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// Discovery follows a 401's resource_metadata to the PRM, and its
// authorization server to Dex's metadata; and, as muster, falls back to
// the path and root well-known forms, taking a PRM whose resource is
// the server's origin.
func TestDiscoveryFindsDexThroughThePRMAndItsLenientFallbacks(t *testing.T) {
	dex := dextest.Start(t, dextest.Options{TLS: true})
	c := newDexClient(t, dex)
	prm := func(resource string, servers ...string) oauthex.ProtectedResourceMetadata {
		return oauthex.ProtectedResourceMetadata{Resource: resource, AuthorizationServers: servers}
	}

	for _, tc := range []struct {
		name string
		docs func(base string) map[string]any
		// resourceMetadata is the challenge's; "" for none.
		resourceMetadata func(base string) string
	}{
		{"the challenge's resource_metadata", func(base string) map[string]any {
			return map[string]any{"/meta/jira": prm(base+"/mcp", dex.Issuer)}
		}, func(base string) string { return base + "/meta/jira" }},
		{"the challenge's URL is a 404 on the provider (muster's mock); the path form, resource the origin", func(base string) map[string]any {
			return map[string]any{"/.well-known/oauth-protected-resource/mcp": prm(base, dex.Issuer)}
		}, func(string) string { return dex.Issuer + "/.well-known/oauth-protected-resource" }},
		{"no challenge URL; the root form", func(base string) map[string]any {
			return map[string]any{"/.well-known/oauth-protected-resource": prm(base+"/", dex.Issuer)}
		}, func(string) string { return "" }},
		{"a PRM for another resource is passed over for the next", func(base string) map[string]any {
			return map[string]any{
				"/.well-known/oauth-protected-resource/mcp": prm("https://elsewhere.example.com/mcp", "https://wrong.example.com"),
				"/.well-known/oauth-protected-resource":     prm(base+"/mcp", dex.Issuer),
			}
		}, func(string) string { return "" }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := prmServer(t, tc.docs)
			s := client.Server{Name: "jira", URL: srv.URL + "/mcp", ResourceMetadata: tc.resourceMetadata(srv.URL)}
			issuer, err := c.Issuer(t.Context(), s)
			if err != nil || issuer != dex.Issuer {
				t.Fatalf("Issuer = %q, %v; want %s", issuer, err, dex.Issuer)
			}
		})
	}

	// A pinned issuer needs no PRM; its metadata must name it.
	issuer, err := c.Issuer(t.Context(), client.Server{Name: "pinned", URL: "http://127.0.0.1:1/mcp", Issuer: dex.Issuer})
	if err != nil || issuer != dex.Issuer {
		t.Errorf("pinned: %q, %v", issuer, err)
	}
	_, err = c.Issuer(t.Context(), client.Server{Name: "pinned", URL: "http://127.0.0.1:1/mcp", Issuer: dex.Issuer + "/other"})
	if err == nil || !strings.Contains(err.Error(), `"pinned"`) {
		t.Errorf("a pinned issuer Dex is not: %v, want an error naming the server", err)
	}
}

// A server whose PRMs name no authorization server, or that serves
// none, is a clear error naming it and what each candidate lacked.
func TestDiscoveryWithoutAnAuthorizationServerNamesTheServer(t *testing.T) {
	dex := dextest.Start(t, dextest.Options{TLS: true})
	c := newDexClient(t, dex)

	srv := prmServer(t, func(base string) map[string]any {
		return map[string]any{"/.well-known/oauth-protected-resource/mcp": oauthex.ProtectedResourceMetadata{Resource: base + "/mcp"}}
	})
	_, err := c.Issuer(t.Context(), client.Server{Name: "jira", URL: srv.URL + "/mcp"})
	var none *client.NoIssuerError
	if !errors.As(err, &none) || none.Server != "jira" || len(none.Tried) != 2 {
		t.Fatalf("Issuer: %v, want a NoIssuerError for jira with two candidates", err)
	}
	for _, want := range []string{`server "jira"`, "names no authorization_servers", "404 Not Found", "spec.auth.authorizationServer.issuer"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the error %q lacks %q", err, want)
		}
	}

	// A server that is not there at all.
	_, err = c.Issuer(t.Context(), client.Server{Name: "gone", URL: "http://127.0.0.1:1/mcp"})
	if !errors.As(err, &none) || none.Server != "gone" {
		t.Errorf("Issuer of an unreachable server: %v", err)
	}
	// Begin says the same.
	if _, err := c.Begin(t.Context(), "user:alice", client.Server{Name: "jira", URL: srv.URL + "/mcp"}); !errors.As(err, &none) {
		t.Errorf("Begin: %v, want a NoIssuerError", err)
	}
}
