package main

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"golang.org/x/oauth2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/musterd/musterd/pkg/apis/muster/v1alpha1"
	"github.com/musterd/musterd/pkg/events"
	oauthclient "github.com/musterd/musterd/pkg/oauth/client"
	oauthconfig "github.com/musterd/musterd/pkg/oauth/config"
)

// Single sign-on by token exchange: a server whose spec says
// auth.tokenExchange (enabled) is each user's at once, as a forwarding
// server is (sso.go), but what its connection carries is a token of the
// server's own provider, got by trading the user's ID token at
// dexTokenEndpoint (package oauth/client's Exchanger): kept per user and
// server until shortly before it expires, traded anew when the server
// refuses it. A token from another issuer than expectedIssuer is refused,
// and the user's connection is not opened: the log and the user's
// auth://status say why.
//
// musterd's client at the server's provider is the one the spec's
// clientCredentialsSecretRef names (Kubernetes mode reads that Secret,
// in its namespace or else the MCPServer's, as muster does; the RBAC lets
// musterd get Secrets in its own namespace).
// Without one, musterd is a public client there, named by its own client
// ID at its provider (aggregator.oauth.server.dex.clientId): the remote
// Dex declares that client public, and musterd sends no secret. A
// clientCredentialsSecretRef in file mode, where there are no Secrets to
// read, is refused with a message that says so.

// exchanges is the daemon's token exchanges for its SSO servers.
type exchanges struct {
	ex *oauthclient.Exchanger
	// clientID is musterd's client ID at its own provider, its public
	// client's at a remote one when the spec names no credentials.
	clientID string
	// secret reads a clientCredentialsSecretRef of the server key; nil
	// where there are no Secrets (file mode).
	secret func(ctx context.Context, key events.Key, ref v1alpha1.ClientCredentialsSecretRef) (id, secret string, err error)
}

func newExchanges(srv oauthconfig.Server, outbound *http.Transport, log *slog.Logger) *exchanges {
	return &exchanges{
		ex: oauthclient.NewExchanger(oauthclient.ExchangerOptions{
			HTTPClient: &http.Client{Transport: outbound, Timeout: 30 * time.Second},
			Logger:     log,
		}),
		clientID: srv.Dex.ClientID,
	}
}

// exchanging says whether auth asks for token exchange.
func exchanging(auth *v1alpha1.MCPServerAuth) bool {
	return auth != nil && auth.TokenExchange != nil && auth.TokenExchange.Enabled
}

// settings are the exchange key's spec asks for, with its client.
func (x *exchanges) settings(ctx context.Context, key events.Key, auth *v1alpha1.MCPServerAuth) (oauthclient.Exchange, error) {
	te := auth.TokenExchange
	out := oauthclient.Exchange{Endpoint: te.DexTokenEndpoint, ExpectedIssuer: te.ExpectedIssuer, ConnectorID: te.ConnectorID,
		Scopes: te.Scopes, Audiences: auth.RequiredAudiences, ClientID: x.clientID}
	ref := te.ClientCredentialsSecretRef
	if ref == nil {
		return out, nil
	}
	if x.secret == nil {
		return out, fmt.Errorf("spec.auth.tokenExchange.clientCredentialsSecretRef names the Secret %q, which musterd reads in Kubernetes mode only; in file mode leave it out, and declare musterd's client (%q) public at the provider",
			ref.Name, x.clientID)
	}
	id, secret, err := x.secret(ctx, key, *ref)
	if err != nil {
		return out, fmt.Errorf("spec.auth.tokenExchange.clientCredentialsSecretRef: %w", err)
	}
	out.ClientID, out.ClientSecret = id, oauthclient.Secret(secret)
	return out, nil
}

// source is what t's connection carries: for an exchanging server, the
// tokens traded for t's owner, the first of them got now, so that a
// refusal is this call's error, said as it is; for a forwarding server,
// the owner's latest token.
func (s *sso) source(ctx context.Context, t ssoTarget) (oauth2.TokenSource, error) {
	forward := tokenOf{s, t.owner}
	e, ok := s.d.Index.Get(t.key)
	server, isServer := e.Object.(*v1alpha1.MCPServer)
	if !ok || !isServer || server == nil || !exchanging(server.Spec.Auth) {
		return forward, nil
	}
	x := s.d.Exchanges
	settings, err := x.settings(ctx, t.key, server.Spec.Auth)
	if err != nil {
		return nil, err
	}
	subject := func() (string, error) {
		tok, err := forward.Token()
		if err != nil {
			return "", err
		}
		return tok.AccessToken, nil
	}
	src := x.ex.TokenSource(t.owner, t.key.Canonical().String(), settings, subject)
	if _, err := src.Token(); err != nil {
		return nil, err
	}
	return src, nil
}

// kubeSecrets reads a clientCredentialsSecretRef in Kubernetes mode, as
// muster does: the Secret in the ref's namespace, else the MCPServer's;
// its client ID and secret under the ref's keys (client-id and
// client-secret by default), both required and not empty. The values are
// never in an error.
func kubeSecrets(cfg *rest.Config) (func(ctx context.Context, key events.Key, ref v1alpha1.ClientCredentialsSecretRef) (string, string, error), error) {
	scheme := runtime.NewScheme()
	if err := corev1.AddToScheme(scheme); err != nil {
		return nil, err
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return nil, fmt.Errorf("kubernetes mode: the client of token exchange's Secrets: %w", err)
	}
	return func(ctx context.Context, key events.Key, ref v1alpha1.ClientCredentialsSecretRef) (string, string, error) {
		ns := ref.Namespace
		if ns == "" {
			ns = key.Canonical().Namespace
		}
		idKey, secretKey := ref.ClientIDKey, ref.ClientSecretKey
		if idKey == "" {
			idKey = v1alpha1.DefaultClientIDKey
		}
		if secretKey == "" {
			secretKey = v1alpha1.DefaultClientSecretKey
		}
		var secret corev1.Secret
		if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: ref.Name}, &secret); err != nil {
			return "", "", fmt.Errorf("read the Secret %s/%s: %w", ns, ref.Name, err)
		}
		values := map[string]string{}
		for _, k := range []string{idKey, secretKey} {
			v, ok := secret.Data[k]
			if !ok || len(v) == 0 {
				return "", "", fmt.Errorf("the Secret %s/%s has no value under %q", ns, ref.Name, k)
			}
			values[k] = string(v)
		}
		return values[idKey], values[secretKey], nil
	}, nil
}
