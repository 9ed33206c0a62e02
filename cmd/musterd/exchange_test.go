package main

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/musterd/musterd/internal/kubetest"
	"github.com/musterd/musterd/pkg/apis/muster/v1alpha1"
	"github.com/musterd/musterd/pkg/events"
	oauthclient "github.com/musterd/musterd/pkg/oauth/client"
)

func exchangeAuth(ref *v1alpha1.ClientCredentialsSecretRef) *v1alpha1.MCPServerAuth {
	return &v1alpha1.MCPServerAuth{RequiredAudiences: []string{"k8s-api"}, TokenExchange: &v1alpha1.TokenExchangeConfig{Enabled: true,
		DexTokenEndpoint: "https://dex-b.test/token", ExpectedIssuer: "https://dex-b.internal", ConnectorID: "cluster-a",
		Scopes: "openid groups", ClientCredentialsSecretRef: ref}}
}

// Without clientCredentialsSecretRef musterd is a public client at the
// server's provider, named by its own client ID; in file mode a
// reference is refused, saying why and what to do instead.
func TestTheExchangeOfAServerInFileMode(t *testing.T) {
	x := &exchanges{clientID: "musterd"}
	key := events.NewKey(v1alpha1.KindMCPServer, "", "k8s")
	got, err := x.settings(t.Context(), key, exchangeAuth(nil))
	require.NoError(t, err)
	assert.Equal(t, oauthclient.Exchange{Endpoint: "https://dex-b.test/token", ExpectedIssuer: "https://dex-b.internal", ConnectorID: "cluster-a",
		Scopes: "openid groups", Audiences: []string{"k8s-api"}, ClientID: "musterd"}, got)

	_, err = x.settings(t.Context(), key, exchangeAuth(&v1alpha1.ClientCredentialsSecretRef{Name: "dex-b-client"}))
	require.Error(t, err)
	assert.Contains(t, err.Error(), `clientCredentialsSecretRef names the Secret "dex-b-client", which musterd reads in Kubernetes mode only`)
	assert.Contains(t, err.Error(), `declare musterd's client ("musterd") public at the provider`)
}

// In Kubernetes mode the Secret is read where the reference says, else
// in the MCPServer's namespace, under its keys; a missing Secret or key
// is an error naming it, never holding a value.
func TestTheExchangeReadsItsClientFromASecretInKubernetesMode(t *testing.T) {
	cp := kubetest.Start(t, kubetest.Options{})
	ctx := t.Context()
	for _, s := range []*corev1.Secret{
		{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "dex-b"}, Data: map[string][]byte{"client-id": []byte("id-default"), "client-secret": []byte("s3cret-default")}},
		{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-public", Name: "dex-b"}, Data: map[string][]byte{"id": []byte("id-public"), "secret": []byte("s3cret-public")}},
		{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "half"}, Data: map[string][]byte{"client-id": []byte("id-half")}},
	} {
		require.NoError(t, cp.Client.Create(ctx, s))
	}
	read, err := kubeSecrets(cp.Config)
	require.NoError(t, err)
	x := &exchanges{clientID: "musterd", secret: read}
	key := events.NewKey(v1alpha1.KindMCPServer, "", "k8s")

	got, err := x.settings(ctx, key, exchangeAuth(&v1alpha1.ClientCredentialsSecretRef{Name: "dex-b"}))
	require.NoError(t, err)
	assert.Equal(t, "id-default", got.ClientID)
	assert.Equal(t, "s3cret-default", got.ClientSecret.Reveal())

	got, err = x.settings(ctx, key, exchangeAuth(&v1alpha1.ClientCredentialsSecretRef{Name: "dex-b", Namespace: "kube-public", ClientIDKey: "id", ClientSecretKey: "secret"}))
	require.NoError(t, err)
	assert.Equal(t, "id-public", got.ClientID)
	assert.Equal(t, "s3cret-public", got.ClientSecret.Reveal())

	for ref, want := range map[v1alpha1.ClientCredentialsSecretRef]string{
		{Name: "half"}:    `the Secret default/half has no value under "client-secret"`,
		{Name: "missing"}: "read the Secret default/missing",
		{Name: "dex-b", Namespace: "kube-public"}: `the Secret kube-public/dex-b has no value under "client-id"`,
	} {
		_, err := x.settings(context.Background(), key, exchangeAuth(&ref))
		require.Error(t, err, "%+v", ref)
		assert.Contains(t, err.Error(), want)
		assert.NotContains(t, err.Error(), "id-half")
		assert.NotContains(t, err.Error(), "s3cret")
	}
}
