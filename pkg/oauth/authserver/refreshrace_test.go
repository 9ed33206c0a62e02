package authserver

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/musterd/musterd/internal/dextest"
	"github.com/musterd/musterd/pkg/oauth/store"
)

// gatedTransport holds every request to the provider's token endpoint
// until released, and says when one arrived.
type gatedTransport struct {
	next     http.RoundTripper
	arrived  chan struct{}
	once     sync.Once
	released chan struct{}
}

func newGate(next http.RoundTripper) *gatedTransport {
	return &gatedTransport{next: next, arrived: make(chan struct{}), released: make(chan struct{})}
}

func (g *gatedTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if strings.HasSuffix(req.URL.Path, "/token") {
		g.once.Do(func() { close(g.arrived) })
		select {
		case <-g.released:
		case <-req.Context().Done():
			return nil, req.Context().Err()
		}
	}
	return g.next.RoundTrip(req)
}

// postForm posts form to musterd's path without the test's require, so
// that a goroutine may call it.
func (r *rig) postForm(path string, form url.Values) (int, map[string]any, error) {
	resp, err := noRedirects.Post(r.base+path, "application/x-www-form-urlencoded", strings.NewReader(form.Encode()))
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	var out map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&out)
	return resp.StatusCode, out, nil
}

// A revocation that arrives while a renewal of its login at the provider
// is under way holds: the renewal does not keep the login again after it.
// Two renewals: a client's refresh, and the renewal of the ID token a
// server is forwarded.
func TestARevocationDuringARenewalHolds(t *testing.T) {
	for _, renewal := range []string{"refresh", "forwarded ID token"} {
		t.Run(renewal, func(t *testing.T) {
			// Dex's ID tokens expire within upstreamEarly: each use renews them.
			r := startRig(t, dextest.Options{TLS: true, IDTokenExpiry: 20 * time.Second}, nil)
			client := r.publicClient(t)
			out := r.tokens(t, client, "alice")
			ctx := context.Background()
			sess, err := r.as.Lookup(ctx, str(out, "access_token"))
			require.NoError(t, err)

			gate := newGate(r.dex.HTTPClient.Transport)
			r.as.upstream.client = &http.Client{Transport: gate, Timeout: 30 * time.Second}

			type result struct {
				status int
				body   map[string]any
				err    error
			}
			renewed := make(chan result, 1)
			go func() {
				if renewal == "refresh" {
					status, body, err := r.postForm(PathToken, url.Values{"grant_type": {"refresh_token"}, "client_id": {client}, "refresh_token": {str(out, "refresh_token")}})
					renewed <- result{status, body, err}
					return
				}
				_, err := r.as.UpstreamIDToken(ctx, sess.Family)
				renewed <- result{err: err}
			}()
			select {
			case <-gate.arrived:
			case res := <-renewed:
				t.Fatalf("the renewal ended before asking the provider: %+v", res)
			case <-time.After(30 * time.Second):
				t.Fatal("the renewal never asked the provider")
			}

			var revoked atomic.Bool
			revokeDone := make(chan error, 1)
			go func() {
				status, body, err := r.postForm(PathRevoke, url.Values{"token": {str(out, "refresh_token")}, "client_id": {client}})
				if err == nil && status != http.StatusOK {
					err = errors.New("revocation answered " + http.StatusText(status))
				}
				_ = body
				revoked.Store(true)
				revokeDone <- err
			}()
			// The revocation is either over (it did not wait for the
			// renewal) or waiting for the family's lock.
			require.Eventually(t, func() bool {
				if revoked.Load() {
					return true
				}
				r.as.familiesMu.Lock()
				defer r.as.familiesMu.Unlock()
				l := r.as.families[sess.Family]
				return l != nil && l.waiters == 2
			}, 30*time.Second, 5*time.Millisecond)
			close(gate.released)

			res := <-renewed
			require.NoError(t, res.err)
			require.NoError(t, <-revokeDone)

			_, err = r.as.Lookup(ctx, str(out, "access_token"))
			assert.ErrorIs(t, err, ErrInvalidToken, "the login is revoked")
			_, found, err := r.as.opts.Store.Get(ctx, kindFamily+sess.Family)
			require.NoError(t, err)
			assert.False(t, found, "the renewal did not keep the revoked login again")
			if renewal == "refresh" && res.status == http.StatusOK {
				_, err = r.as.Lookup(ctx, str(res.body, "access_token"))
				assert.ErrorIs(t, err, ErrInvalidToken, "the refresh's new access token is revoked with its login")
				status, body := r.token(t, url.Values{"grant_type": {"refresh_token"}, "client_id": {client}, "refresh_token": {str(res.body, "refresh_token")}})
				assert.Equal(t, http.StatusBadRequest, status, "the refresh's new refresh token is revoked with its login: %v", body)
			}
		})
	}
}

// A provider that cannot be reached during a refresh ends no login: the
// client is told of a server error, and its refresh token, unspent,
// refreshes once the provider is back.
func TestAProviderDownDuringARefreshEndsNoLogin(t *testing.T) {
	r := startRig(t, dextest.Options{TLS: true, IDTokenExpiry: 20 * time.Second}, nil)
	client := r.publicClient(t)
	out := r.tokens(t, client, "alice")
	refresh := url.Values{"grant_type": {"refresh_token"}, "client_id": {client}, "refresh_token": {str(out, "refresh_token")}}

	httpClient := r.as.upstream.client
	r.as.upstream.client = &http.Client{Transport: failingTransport{}}
	status, body := r.token(t, refresh)
	assert.Equal(t, http.StatusInternalServerError, status, body)
	assert.Equal(t, "server_error", str(body, "error"))
	_, err := r.as.Lookup(context.Background(), str(out, "access_token"))
	assert.NoError(t, err, "the login stands")

	r.as.upstream.client = httpClient
	status, body = r.token(t, refresh)
	require.Equal(t, http.StatusOK, status, "the same refresh token, the provider back: %v", body)
	assert.NotEqual(t, str(out, "refresh_token"), str(body, "refresh_token"), "rotated")
}

// failingStore is a store whose next Put of a key with the prefix fails.
type failingStore struct {
	store.Store
	prefix atomic.Pointer[string]
}

func (f *failingStore) Put(ctx context.Context, key string, value []byte, ttl time.Duration) error {
	if p := f.prefix.Load(); p != nil && strings.HasPrefix(key, *p) && f.prefix.CompareAndSwap(p, nil) {
		return errors.New("the store is unreachable")
	}
	return f.Store.Put(ctx, key, value, ttl)
}

// A store that fails while a refresh keeps the new tokens ends no login:
// the client's retry with the same refresh token is no reuse, and
// refreshes.
func TestAStoreFailureDuringARefreshEndsNoLogin(t *testing.T) {
	kv := &failingStore{Store: store.NewMemory(store.MemoryOptions{})}
	r := startRig(t, dextest.Options{TLS: true}, func(o *Options) { o.Store = kv })
	client := r.publicClient(t)
	out := r.tokens(t, client, "alice")
	refresh := url.Values{"grant_type": {"refresh_token"}, "client_id": {client}, "refresh_token": {str(out, "refresh_token")}}

	for _, kind := range []string{kindRefresh, kindAccess, kindFamily} {
		kv.prefix.Store(&kind)
		status, body := r.token(t, refresh)
		assert.Equal(t, http.StatusInternalServerError, status, "keeping a %s failed: %v", kind, body)
		require.Nil(t, kv.prefix.Load(), "the failure was met")
	}
	status, body := r.token(t, refresh)
	require.Equal(t, http.StatusOK, status, "the retry is no reuse: %v", body)
	_, err := r.as.Lookup(context.Background(), str(body, "access_token"))
	assert.NoError(t, err)
}
