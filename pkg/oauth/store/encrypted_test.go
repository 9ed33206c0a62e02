package store_test

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/musterd/musterd/internal/redistest"
	"github.com/musterd/musterd/pkg/oauth/store"
)

// secretForms are the ways a secret might show in a stored value: plain,
// hex, and each base64 alphabet, padded or not.
func secretForms(secret string) []string {
	b := []byte(secret)
	return []string{
		secret,
		hex.EncodeToString(b),
		base64.StdEncoding.EncodeToString(b),
		base64.RawStdEncoding.EncodeToString(b),
		base64.URLEncoding.EncodeToString(b),
		base64.RawURLEncoding.EncodeToString(b),
	}
}

func TestEncryptedValuesInRedisHoldNoPlaintext(t *testing.T) {
	ctx := t.Context()
	r := redistest.Start(t)
	c := plainClient(t, r)
	inner := newValkey(t, store.ValkeyOptions{URL: r.URL()})
	s, err := store.Encrypted(inner, testKey)
	require.NoError(t, err)

	secrets := map[string]string{
		"token:alice:access":  "eyJhbGciOiJSUzI1NiIsImtpZCI6ImFiYyJ9.eyJzdWIiOiJhbGljZSJ9.c2lnbmF0dXJlLW9mLWFsaWNl",
		"token:alice:refresh": "ChlvYnRhaW5lZC1yZWZyZXNoLXRva2VuLWZvci1hbGljZRIZb2F1dGgtcmVmcmVzaC10b2tlbg",
		"state:nonce-1":       `{"verifier":"dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk","server":"github"}`,
		"client:issuer":       `{"client_id":"abc","client_secret":"dcr-client-secret-value"}`,
	}
	for k, v := range secrets {
		require.NoError(t, s.Put(ctx, k, []byte(v), 0))
	}
	// Every value in the server, found by listing the server's keys, not
	// the store's.
	keys := rawKeys(t, c)
	require.Len(t, keys, len(secrets))
	for _, raw := range keys {
		value := string(rawGet(t, c, raw))
		for _, secret := range secrets {
			for _, form := range secretForms(secret) {
				assert.NotContains(t, value, form, "%s holds a secret in the clear or encoded", raw)
			}
			// Nor any long stretch of one (a token inside JSON).
			for i := 0; i+16 <= len(secret); i += 8 {
				assert.NotContains(t, value, secret[i:i+16], "%s holds part of a secret", raw)
			}
		}
		assert.Len(t, value, 1+12+len(secrets[strings.TrimPrefix(raw, store.DefaultKeyPrefix)])+16,
			"%s: version, nonce, ciphertext and tag", raw)
	}
	for k, v := range secrets {
		got, found := get(t, s, k)
		assert.True(t, found)
		assert.Equal(t, v, string(got))
	}
}

func TestEncryptedWithAnotherKeyFailsWithAnError(t *testing.T) {
	for _, b := range []backend{memoryBackend(false), valkeyBackend(false)} {
		t.Run(b.name, func(t *testing.T) {
			ctx := t.Context()
			inner := b.open(t)
			s, err := store.Encrypted(inner, testKey)
			require.NoError(t, err)
			require.NoError(t, s.Put(ctx, "token:alice-subject:1", []byte("alice-access-token"), 0))

			otherKey := bytes.Repeat([]byte{0x43}, store.KeySize)
			other, err := store.Encrypted(inner, otherKey)
			require.NoError(t, err)
			v, found, err := other.Get(ctx, "token:alice-subject:1")
			require.ErrorIs(t, err, store.ErrDecrypt)
			assert.False(t, found)
			assert.Nil(t, v, "a value that does not decrypt gave something back")
			assert.Contains(t, err.Error(), `"token:…"`)
			assert.NotContains(t, err.Error(), "alice")

			// The store itself still reads it.
			v, found = get(t, s, "token:alice-subject:1")
			assert.True(t, found)
			assert.Equal(t, "alice-access-token", string(v))
		})
	}
}

func TestEncryptedValueMovedToAnotherKeyFails(t *testing.T) {
	for _, b := range []backend{memoryBackend(false), valkeyBackend(false)} {
		t.Run(b.name, func(t *testing.T) {
			ctx := t.Context()
			inner := b.open(t)
			s, err := store.Encrypted(inner, testKey)
			require.NoError(t, err)
			require.NoError(t, s.Put(ctx, "token:alice:1", []byte("alice's token"), 0))

			// Someone with write access to the server copies alice's
			// sealed token under bob's key.
			sealed, found := get(t, inner, "token:alice:1")
			require.True(t, found)
			require.NoError(t, inner.Put(ctx, "token:bob:1", sealed, 0))
			v, found, err := s.Get(ctx, "token:bob:1")
			require.ErrorIs(t, err, store.ErrDecrypt)
			assert.False(t, found)
			assert.Nil(t, v)
			_, _, err = s.Take(ctx, "token:bob:1")
			require.ErrorIs(t, err, store.ErrDecrypt)
			_, found = get(t, inner, "token:bob:1")
			assert.False(t, found, "a Take that fails to decrypt still deletes")

			v, found = get(t, s, "token:alice:1")
			assert.True(t, found)
			assert.Equal(t, "alice's token", string(v))
		})
	}
}

func TestEncryptedAlteredOrForeignValuesFail(t *testing.T) {
	ctx := t.Context()
	inner := store.NewMemory(store.MemoryOptions{})
	s, err := store.Encrypted(inner, testKey)
	require.NoError(t, err)
	require.NoError(t, s.Put(ctx, "k", []byte("a value of some length"), 0))
	sealed, _ := get(t, inner, "k")

	// Each byte flipped: the version, the nonce, the ciphertext, the tag.
	for i := range sealed {
		altered := bytes.Clone(sealed)
		altered[i] ^= 0x01
		require.NoError(t, inner.Put(ctx, "k", altered, 0))
		v, found, err := s.Get(ctx, "k")
		require.ErrorIs(t, err, store.ErrDecrypt, "byte %d flipped", i)
		assert.False(t, found)
		assert.Nil(t, v)
	}
	for _, foreign := range [][]byte{nil, []byte("plain text, never sealed"), sealed[:len(sealed)-1], sealed[:13], {1}} {
		require.NoError(t, inner.Put(ctx, "k", foreign, 0))
		_, _, err := s.Get(ctx, "k")
		require.ErrorIs(t, err, store.ErrDecrypt, "%q", foreign)
	}
}

func TestEncryptedUsesAFreshNonceForEveryValue(t *testing.T) {
	ctx := t.Context()
	inner := store.NewMemory(store.MemoryOptions{})
	s, err := store.Encrypted(inner, testKey)
	require.NoError(t, err)
	seen := map[string]bool{}
	for i := range 50 {
		key := fmt.Sprintf("k%d", i%2) // the same value, again and again, under two keys
		require.NoError(t, s.Put(ctx, key, []byte("same value"), 0))
		sealed, _ := get(t, inner, key)
		nonce := string(sealed[1:13])
		assert.False(t, seen[nonce], "nonce reused at put %d", i)
		seen[nonce] = true
	}
}

func TestEncryptedWantsA32ByteKey(t *testing.T) {
	inner := store.NewMemory(store.MemoryOptions{})
	for _, n := range []int{0, 16, 24, 31, 33, 64} {
		s, err := store.Encrypted(inner, make([]byte, n))
		require.Error(t, err, "%d bytes", n)
		assert.Nil(t, s)
		assert.Contains(t, err.Error(), fmt.Sprintf("has %d bytes, want 32", n))
	}
	_, err := store.Encrypted(inner, make([]byte, 32))
	require.NoError(t, err)
}

// A store printed by mistake, in a log line or an error, shows what it is,
// never a value or the encryption key.
func TestAPrintedStoreShowsNoValues(t *testing.T) {
	ctx := t.Context()
	mem := store.NewMemory(store.MemoryOptions{})
	require.NoError(t, mem.Put(ctx, "token:alice", []byte("alice-secret-token"), 0))
	enc, err := store.Encrypted(mem, []byte("0123456789abcdef0123456789abcdef"))
	require.NoError(t, err)
	for _, s := range []store.Store{mem, enc} {
		for _, format := range []string{"%v", "%+v", "%s"} {
			out := fmt.Sprintf(format, s)
			assert.NotContains(t, out, "alice", format)
			assert.NotContains(t, out, "0123456789abcdef", format)
			assert.Contains(t, out, "oauth store (memory)", format)
		}
	}
}
