package store_test

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/valkey-io/valkey-go"

	"github.com/musterd/musterd/internal/redistest"
	"github.com/musterd/musterd/pkg/oauth/store"
)

// plainClient is a client of r's that is no Store: it sees keys and values
// as they are in the server.
func plainClient(t *testing.T, r *redistest.Redis) valkey.Client {
	t.Helper()
	c, err := valkey.NewClient(valkey.ClientOption{InitAddress: []string{r.Addr}, Password: r.Password, DisableCache: true})
	require.NoError(t, err)
	t.Cleanup(c.Close)
	return c
}

func rawGet(t *testing.T, c valkey.Client, key string) []byte {
	t.Helper()
	v, err := c.Do(t.Context(), c.B().Get().Key(key).Build()).AsBytes()
	require.NoError(t, err, "GET of the raw value")
	return v
}

func rawKeys(t *testing.T, c valkey.Client) []string {
	t.Helper()
	keys, err := c.Do(t.Context(), c.B().Keys().Pattern("*").Build()).AsStrSlice()
	require.NoError(t, err)
	return keys
}

func newValkey(t *testing.T, opts store.ValkeyOptions) store.Store {
	t.Helper()
	s, err := store.NewValkey(t.Context(), opts)
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	return s
}

func TestValkeyKeepsValuesUnderTheKeyPrefixWithTheServersExpiry(t *testing.T) {
	ctx := t.Context()
	r := redistest.Start(t)
	c := plainClient(t, r)
	s := newValkey(t, store.ValkeyOptions{URL: r.URL()})
	require.NoError(t, s.Put(ctx, "token:alice:1", []byte("value-1"), 0))
	require.NoError(t, s.Put(ctx, "state:n1", []byte("value-2"), 10*time.Minute))

	assert.ElementsMatch(t, []string{"musterd:oauth:token:alice:1", "musterd:oauth:state:n1"}, rawKeys(t, c))
	assert.Equal(t, "value-1", string(rawGet(t, c, "musterd:oauth:token:alice:1")))
	ttl, err := c.Do(ctx, c.B().Pttl().Key("musterd:oauth:state:n1").Build()).AsInt64()
	require.NoError(t, err)
	assert.True(t, ttl > 9*60*1000 && ttl <= 10*60*1000, "PTTL %d ms, want about 10 minutes", ttl)
	ttl, err = c.Do(ctx, c.B().Pttl().Key("musterd:oauth:token:alice:1").Build()).AsInt64()
	require.NoError(t, err)
	assert.Equal(t, int64(-1), ttl, "a value without a TTL has an expiry in the server")

	// A TTL below Redis's millisecond still expires, rather than failing
	// or living for ever.
	require.NoError(t, s.Put(ctx, "state:tiny", []byte("v"), time.Microsecond))
	eventually(t, 10*time.Second, func() bool { _, found := get(t, s, "state:tiny"); return !found }, "a 1 µs TTL did not expire")

	// Another prefix is another namespace on the same server.
	other := newValkey(t, store.ValkeyOptions{URL: r.URL(), KeyPrefix: "other:"})
	require.NoError(t, other.Put(ctx, "token:alice:1", []byte("other-1"), 0))
	assert.Equal(t, "other-1", string(rawGet(t, c, "other:token:alice:1")))
	v, _ := get(t, s, "token:alice:1")
	assert.Equal(t, "value-1", string(v))
	keys, err := other.Keys(ctx, "")
	require.NoError(t, err)
	assert.Equal(t, []string{"token:alice:1"}, keys)
	keys, err = s.Keys(ctx, "")
	require.NoError(t, err)
	assert.Equal(t, []string{"state:n1", "token:alice:1"}, keys, "the default prefix's keys")
}

func TestValkeyDatabasesAreApart(t *testing.T) {
	ctx := t.Context()
	r := redistest.Start(t)
	db0 := newValkey(t, store.ValkeyOptions{URL: r.Addr}) // host:port, as muster's storage.valkey.url
	db1 := newValkey(t, store.ValkeyOptions{URL: r.URL(), DB: 1})
	db1URL := newValkey(t, store.ValkeyOptions{URL: r.URL() + "/1"})
	require.NoError(t, db0.Put(ctx, "k", []byte("zero"), 0))
	require.NoError(t, db1.Put(ctx, "k", []byte("one"), 0))
	v, _ := get(t, db0, "k")
	assert.Equal(t, "zero", string(v))
	v, _ = get(t, db1URL, "k")
	assert.Equal(t, "one", string(v))
}

// What a store wrote, a new store on the same server reads: the half of
// "tokens survive a restart of musterd" the store owns.
func TestValkeyValuesSurviveANewStore(t *testing.T) {
	ctx := t.Context()
	r := redistest.Start(t)
	first, err := store.NewValkey(ctx, store.ValkeyOptions{URL: r.URL()})
	require.NoError(t, err)
	sealed, err := store.Encrypted(first, testKey)
	require.NoError(t, err)
	require.NoError(t, first.Put(ctx, "client:issuer", []byte("registration"), 0))
	require.NoError(t, sealed.Put(ctx, "token:alice:1", []byte("alice's token"), time.Hour))
	require.NoError(t, sealed.Close())

	second := newValkey(t, store.ValkeyOptions{URL: r.URL()})
	v, found := get(t, second, "client:issuer")
	assert.True(t, found)
	assert.Equal(t, "registration", string(v))
	opened, err := store.Encrypted(second, testKey)
	require.NoError(t, err)
	v, found = get(t, opened, "token:alice:1")
	assert.True(t, found)
	assert.Equal(t, "alice's token", string(v))
	keys, err := opened.Keys(ctx, "token:alice:")
	require.NoError(t, err)
	assert.Equal(t, []string{"token:alice:1"}, keys)
}

func TestValkeyUnreachableAtStartIsAnErrorNamingTheHost(t *testing.T) {
	r := redistest.StartWith(t, redistest.Options{Password: "hunter2-secret"})
	addr := r.Addr
	r.Stop()
	_, port, _ := net.SplitHostPort(addr)
	for _, opts := range []store.ValkeyOptions{
		{URL: "redis://:hunter2-secret@" + addr},
		{URL: "redis://musterd:hunter2-secret@" + addr + "/3"},
		{URL: addr, Password: "hunter2-secret"},
		{URL: "redis://" + addr, Password: "hunter2-secret", DialTimeout: time.Second},
	} {
		start := time.Now()
		s, err := store.NewValkey(t.Context(), opts)
		require.Error(t, err, "%s: no error for a stopped server", opts.URL)
		assert.Nil(t, s)
		assert.Contains(t, err.Error(), "127.0.0.1:"+port, "the error names the server")
		assert.NotContains(t, err.Error(), "hunter2", "the error holds the password")
		assert.Less(t, time.Since(start), 10*time.Second)
	}

	// A URL that does not parse is refused without quoting it.
	_, err := store.NewValkey(t.Context(), store.ValkeyOptions{URL: "redis://:hunter2%zz@127.0.0.1:1"})
	require.Error(t, err)
	assert.NotContains(t, err.Error(), "hunter2")
	_, err = store.NewValkey(t.Context(), store.ValkeyOptions{URL: "http://:hunter2@127.0.0.1:1"})
	require.Error(t, err)
	assert.NotContains(t, err.Error(), "hunter2")
	_, err = store.NewValkey(t.Context(), store.ValkeyOptions{})
	require.ErrorContains(t, err, "no URL")

	// A cancelled context stops the start.
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	_, err = store.NewValkey(ctx, store.ValkeyOptions{URL: addr})
	require.ErrorIs(t, err, context.Canceled)
}

func TestValkeyPasswordIsChecked(t *testing.T) {
	ctx := t.Context()
	const password = "s3cret-valkey-password"
	r := redistest.StartWith(t, redistest.Options{Password: password})
	for name, opts := range map[string]store.ValkeyOptions{
		"none":  {URL: r.URL()},
		"wrong": {URL: r.URL(), Password: "wrong-password-given"},
	} {
		_, err := store.NewValkey(ctx, opts)
		require.Error(t, err, "%s password: a server that wants one was accepted", name)
		assert.Contains(t, err.Error(), r.Addr)
		assert.NotContains(t, err.Error(), password)
		assert.NotContains(t, err.Error(), "wrong-password-given")
	}
	for name, opts := range map[string]store.ValkeyOptions{
		"option": {URL: r.URL(), Password: password},
		"url":    {URL: "redis://:" + password + "@" + r.Addr},
	} {
		s := newValkey(t, opts)
		require.NoError(t, s.Put(ctx, "k", []byte(name), 0), name)
		assert.NotContains(t, fmt.Sprint(s), password, "a printed store shows the password")
		assert.Contains(t, fmt.Sprint(s), r.Addr)
	}
}

// TLS: a rediss:// URL, or a TLS configuration in the options (muster's
// tlsEnabled), against a server that speaks TLS only.
func TestValkeyOverTLS(t *testing.T) {
	ctx := t.Context()
	r := redistest.StartWith(t, redistest.Options{TLS: true, Password: "pw"})
	for name, opts := range map[string]store.ValkeyOptions{
		"rediss URL with the CA": {URL: r.URL(), Password: "pw", TLS: r.TLSConfig()},
		"host:port with TLS":     {URL: r.Addr, Password: "pw", TLS: r.TLSConfig()},
	} {
		s := newValkey(t, opts)
		require.NoError(t, s.Put(ctx, "k", []byte(name), 0), name)
		v, _ := get(t, s, "k")
		assert.Equal(t, name, string(v))
	}

	// A rediss:// URL verifies the server: without the test's CA the
	// system's roots refuse its certificate.
	_, err := store.NewValkey(ctx, store.ValkeyOptions{URL: r.URL(), Password: "pw", DialTimeout: 2 * time.Second})
	require.Error(t, err)
	assert.Contains(t, err.Error(), r.Addr)
	assert.Contains(t, err.Error(), "certificate")

	// Plain TCP to a TLS server is an error at start, not a hang.
	_, err = store.NewValkey(ctx, store.ValkeyOptions{URL: "redis://" + r.Addr, Password: "pw", DialTimeout: 2 * time.Second})
	require.Error(t, err)
	assert.Contains(t, err.Error(), r.Addr)

	// And a TLS configuration against a plain server fails the handshake:
	// the option is used, not ignored.
	plain := redistest.Start(t)
	_, err = store.NewValkey(ctx, store.ValkeyOptions{URL: plain.URL(), TLS: &tls.Config{MinVersion: tls.VersionTLS12}, DialTimeout: time.Second})
	require.Error(t, err, "TLS to a plain-TCP server succeeded")
	assert.Contains(t, err.Error(), plain.Addr)
}

// An error of the server is reported with the operation and the key's
// kind, never the rest of the key.
func TestValkeyErrorsNameTheKindOfKeyOnly(t *testing.T) {
	ctx := t.Context()
	r := redistest.Start(t)
	c := plainClient(t, r)
	key := "token:user-8a1f-secret-subject"
	require.NoError(t, c.Do(ctx, c.B().Lpush().Key("musterd:oauth:"+key).Element("x").Build()).Error())
	s := newValkey(t, store.ValkeyOptions{URL: r.URL()})
	_, _, err := s.Get(ctx, key)
	require.Error(t, err, "GET of a list")
	assert.Contains(t, err.Error(), `get "token:…"`)
	assert.Contains(t, err.Error(), "WRONGTYPE")
	assert.NotContains(t, err.Error(), "user-8a1f")
	_, _, err = s.Take(ctx, key)
	require.Error(t, err)
	assert.Contains(t, err.Error(), `take "token:…"`)
	assert.NotContains(t, err.Error(), "user-8a1f")
}

// When the server goes away and comes back, the store reconnects: a
// restart of Valkey needs no restart of musterd.
func TestValkeyReconnectsAfterTheServerRestarts(t *testing.T) {
	ctx := t.Context()
	r := redistest.Start(t)
	s := newValkey(t, store.ValkeyOptions{URL: r.URL()})
	require.NoError(t, s.Put(ctx, "k", []byte("before"), 0))
	r.Restart(t)
	var putErr error
	eventually(t, 15*time.Second, func() bool {
		putErr = s.Put(ctx, "k", []byte("after"), 0)
		return putErr == nil
	}, "the store did not reconnect")
	v, found := get(t, s, "k")
	assert.True(t, found)
	assert.Equal(t, "after", string(v))
}

// Keys walks a keyspace larger than one SCAN step.
func TestValkeyKeysWalksEveryScanStep(t *testing.T) {
	ctx := t.Context()
	r := redistest.Start(t)
	s := newValkey(t, store.ValkeyOptions{URL: r.URL()})
	var want []string
	for i := range 1000 {
		k := "token:alice:" + strconv.Itoa(10000+i)
		want = append(want, k)
		require.NoError(t, s.Put(ctx, k, []byte("v"), 0))
		require.NoError(t, s.Put(ctx, "token:bob:"+strconv.Itoa(i), []byte("v"), 0))
	}
	got, err := s.Keys(ctx, "token:alice:")
	require.NoError(t, err)
	assert.Equal(t, want, got)
	for _, k := range got {
		require.True(t, strings.HasPrefix(k, "token:alice:"))
	}
}
