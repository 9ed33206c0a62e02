package authserver

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"testing/synctest"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// stalledTransport is a provider that never answers: each request waits
// for its context to end.
type stalledTransport struct{}

func (stalledTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	<-req.Context().Done()
	return nil, req.Context().Err()
}

// stalledRig is an authorization server whose provider never answers,
// with one login, and the request of its access token.
func stalledRig(t *testing.T) (*Server, *Authenticator, func() *http.Request) {
	t.Helper()
	as, err := New(Options{
		Issuer:     "http://127.0.0.1:1",
		Upstream:   Upstream{Issuer: "https://idp.example", ClientID: "musterd"},
		HTTPClient: &http.Client{Transport: stalledTransport{}},
	})
	require.NoError(t, err)
	as.upstream.provider = (&oidc.ProviderConfig{IssuerURL: "https://idp.example",
		TokenURL: "https://idp.example/token", UserInfoURL: "https://idp.example/userinfo"}).NewProvider(context.Background())
	later := time.Now().Add(time.Hour)
	resp, err := as.mint(context.Background(), &familyRecord{ID: "login", ClientID: "client", Subject: "alice",
		Upstream: upstreamTokens{AccessToken: "upstream-access", RefreshToken: "upstream-refresh", IDToken: "id", Expiry: later, IDExpiry: later}})
	require.NoError(t, err)
	a := as.Authenticator(AuthenticatorOptions{Others: fixedAuthenticator{}, ResourceMetadataURL: "http://127.0.0.1:1/prm"})
	request := func() *http.Request {
		req := httptest.NewRequest(http.MethodPost, "/mcp", nil)
		req.Header.Set("Authorization", "Bearer "+resp.AccessToken)
		return req
	}
	return as, a, request
}

// A provider that does not answer whether a login stands costs a request
// standsTimeout at most, and ends no login.
func TestAStalledProviderCostsARequestTheBoundAtMost(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		_, a, request := stalledRig(t)
		start := time.Now()
		who, challenge := a.Authenticate(request())
		assert.Equal(t, standsTimeout, time.Since(start))
		assert.Equal(t, 5*time.Second, standsTimeout)
		assert.Nil(t, challenge, "the login stands")
		assert.Equal(t, "alice", who.Subject)
	})
}

// A discovery of the provider under way holds up no other caller: each
// waits for its own fetch, bounded by its own context. (Real time: a
// goroutine waiting for a mutex would stop synctest's clock.)
func TestAStalledDiscoveryHoldsUpNoOtherCaller(t *testing.T) {
	arrived := make(chan struct{}, 2)
	as, err := New(Options{
		Issuer:   "http://127.0.0.1:1",
		Upstream: Upstream{Issuer: "https://idp.example", ClientID: "musterd"},
		HTTPClient: &http.Client{Transport: roundTripFunc(func(req *http.Request) (*http.Response, error) {
			arrived <- struct{}{}
			return stalledTransport{}.RoundTrip(req)
		})},
	})
	require.NoError(t, err)
	first, cancel := context.WithCancel(context.Background())
	defer cancel()
	firstDone := make(chan error, 1)
	go func() {
		_, err := as.upstream.discover(first)
		firstDone <- err
	}()
	<-arrived // the first discovery waits on the provider

	second, cancelSecond := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancelSecond()
	secondDone := make(chan error, 1)
	go func() {
		_, err := as.upstream.discover(second)
		secondDone <- err
	}()
	select {
	case err := <-secondDone:
		assert.ErrorIs(t, err, context.DeadlineExceeded, "its own fetch, ended by its own context")
	case <-time.After(30 * time.Second):
		t.Error("a caller waited for another's discovery beyond its own context")
	}
	cancel()
	assert.ErrorIs(t, <-firstDone, context.Canceled)
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

// A request whose login is being renewed by another (here: the family's
// lock held, as a refresh stalled at the provider holds it) waits for it
// standsTimeout at most, and its login stands.
func TestARenewalUnderWayHoldsUpARequestTheBoundAtMost(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		as, a, request := stalledRig(t)
		ctx := context.Background()
		var fam familyRecord
		require.NoError(t, getJSON(ctx, as.opts.Store, kindFamily+"login", &fam))
		fam.Upstream.IDExpiry = time.Now().Add(upstreamEarly / 2) // due for renewal
		require.NoError(t, putJSON(ctx, as.opts.Store, kindFamily+"login", fam, 0))
		unlock, err := as.lockFamily(ctx, "login")
		require.NoError(t, err)
		defer unlock()

		start := time.Now()
		who, challenge := a.Authenticate(request())
		assert.Equal(t, standsTimeout, time.Since(start))
		assert.Nil(t, challenge, "the login stands")
		assert.Equal(t, "alice", who.Subject)
	})
}
