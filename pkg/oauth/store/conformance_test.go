package store_test

import (
	"bytes"
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/musterd/musterd/internal/redistest"
	"github.com/musterd/musterd/pkg/oauth/store"
)

// testKey is the encryption key of the encrypted backends.
var testKey = bytes.Repeat([]byte{0x42}, store.KeySize)

// backend is one implementation under the conformance suite.
type backend struct {
	name string
	// open returns a new, empty store.
	open func(t *testing.T) store.Store
	// shortTTL is the expiry the suite gives values it watches expire:
	// virtual for memory, long enough for a real server that a Get right
	// after the Put never races it.
	shortTTL time.Duration
	// expire lets shortTTL pass for the store open returned last, then
	// checks gone: at once where time is virtual, else polling until a
	// deadline.
	expire func(t *testing.T, gone func() bool)
}

// fakeClock is the memory store's Now in the suite.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func newFakeClock() *fakeClock {
	return &fakeClock{now: time.Date(2026, 11, 29, 8, 0, 0, 0, time.UTC)}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

func memoryBackend(encrypted bool) backend {
	var clock *fakeClock
	b := backend{name: "memory", shortTTL: time.Minute}
	b.open = func(t *testing.T) store.Store {
		clock = newFakeClock()
		s := store.NewMemory(store.MemoryOptions{Now: clock.Now})
		t.Cleanup(func() { s.Close() })
		return maybeEncrypted(t, s, encrypted)
	}
	b.expire = func(t *testing.T, gone func() bool) {
		t.Helper()
		clock.Advance(b.shortTTL)
		require.True(t, gone(), "not expired once its TTL passed")
	}
	if encrypted {
		b.name = "encrypted memory"
	}
	return b
}

func valkeyBackend(encrypted bool) backend {
	b := backend{name: "valkey", shortTTL: 3 * time.Second}
	b.open = func(t *testing.T) store.Store {
		r := redistest.Start(t)
		s, err := store.NewValkey(t.Context(), store.ValkeyOptions{URL: r.URL()})
		require.NoError(t, err)
		t.Cleanup(func() { s.Close() })
		return maybeEncrypted(t, s, encrypted)
	}
	b.expire = func(t *testing.T, gone func() bool) {
		t.Helper()
		eventually(t, b.shortTTL+10*time.Second, gone, "not expired within 10 s after its TTL")
	}
	if encrypted {
		b.name = "encrypted valkey"
	}
	return b
}

func maybeEncrypted(t *testing.T, s store.Store, encrypted bool) store.Store {
	t.Helper()
	if !encrypted {
		return s
	}
	e, err := store.Encrypted(s, testKey)
	require.NoError(t, err)
	return e
}

func backends() []backend {
	return []backend{memoryBackend(false), valkeyBackend(false), memoryBackend(true), valkeyBackend(true)}
}

// eventually polls cond every 20 ms until it holds, failing t at the
// deadline.
func eventually(t *testing.T, within time.Duration, cond func() bool, msg string) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal(msg)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestConformance runs the same assertions against every implementation.
func TestConformance(t *testing.T) {
	for _, b := range backends() {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			t.Run("PutGetOverwrite", func(t *testing.T) { testPutGetOverwrite(t, b) })
			t.Run("ValuesAreCopied", func(t *testing.T) { testValuesAreCopied(t, b) })
			t.Run("EmptyAndBinaryValues", func(t *testing.T) { testEmptyAndBinaryValues(t, b) })
			t.Run("TakeIsSingleUse", func(t *testing.T) { testTakeIsSingleUse(t, b) })
			t.Run("Delete", func(t *testing.T) { testDelete(t, b) })
			t.Run("KeysByPrefix", func(t *testing.T) { testKeysByPrefix(t, b) })
			t.Run("Expiry", func(t *testing.T) { testExpiry(t, b) })
			t.Run("BadArguments", func(t *testing.T) { testBadArguments(t, b) })
			t.Run("Closed", func(t *testing.T) { testClosed(t, b) })
		})
	}
}

func get(t *testing.T, s store.Store, key string) ([]byte, bool) {
	t.Helper()
	v, found, err := s.Get(t.Context(), key)
	require.NoError(t, err)
	return v, found
}

func testPutGetOverwrite(t *testing.T, b backend) {
	ctx := t.Context()
	s := b.open(t)
	v, found := get(t, s, "token:alice:1")
	assert.False(t, found, "a key never put is found")
	assert.Nil(t, v)

	require.NoError(t, s.Put(ctx, "token:alice:1", []byte("first"), 0))
	v, found = get(t, s, "token:alice:1")
	assert.True(t, found)
	assert.Equal(t, "first", string(v))

	require.NoError(t, s.Put(ctx, "token:alice:1", []byte("second"), 0))
	v, found = get(t, s, "token:alice:1")
	assert.True(t, found)
	assert.Equal(t, "second", string(v))

	// A Get reads, it does not consume.
	v, found = get(t, s, "token:alice:1")
	assert.True(t, found)
	assert.Equal(t, "second", string(v))
}

func testValuesAreCopied(t *testing.T, b backend) {
	ctx := t.Context()
	s := b.open(t)
	in := []byte("original")
	require.NoError(t, s.Put(ctx, "k", in, 0))
	copy(in, "XXXXXXXX")
	out, _ := get(t, s, "k")
	require.Equal(t, "original", string(out), "the store kept the caller's slice")
	copy(out, "YYYYYYYY")
	again, _ := get(t, s, "k")
	assert.Equal(t, "original", string(again), "the store handed out its own slice")
}

func testEmptyAndBinaryValues(t *testing.T, b backend) {
	ctx := t.Context()
	s := b.open(t)
	require.NoError(t, s.Put(ctx, "empty", nil, 0))
	v, found := get(t, s, "empty")
	assert.True(t, found, "an empty value is a value")
	assert.Empty(t, v)

	all := make([]byte, 256)
	for i := range all {
		all[i] = byte(i)
	}
	require.NoError(t, s.Put(ctx, "binary", all, 0))
	v, found = get(t, s, "binary")
	assert.True(t, found)
	assert.Equal(t, all, v)
}

func testTakeIsSingleUse(t *testing.T, b backend) {
	ctx := t.Context()
	s := b.open(t)
	require.NoError(t, s.Put(ctx, "state:n1", []byte("login"), 0))
	v, found, err := s.Take(ctx, "state:n1")
	require.NoError(t, err)
	assert.True(t, found)
	assert.Equal(t, "login", string(v))
	_, found = get(t, s, "state:n1")
	assert.False(t, found, "a taken value is still there")
	v, found, err = s.Take(ctx, "state:n1")
	require.NoError(t, err)
	assert.False(t, found, "a value was taken twice")
	assert.Nil(t, v)

	// Of many concurrent Takes of one key, one alone finds it.
	for round := range 5 {
		require.NoError(t, s.Put(ctx, "state:race", []byte("once"), 0))
		var wins atomic.Int32
		var wg sync.WaitGroup
		start := make(chan struct{})
		for range 16 {
			wg.Go(func() {
				<-start
				v, found, err := s.Take(ctx, "state:race")
				assert.NoError(t, err)
				if found {
					assert.Equal(t, "once", string(v))
					wins.Add(1)
				}
			})
		}
		close(start)
		wg.Wait()
		assert.Equal(t, int32(1), wins.Load(), "round %d: takers that found the value", round)
	}
}

func testDelete(t *testing.T, b backend) {
	ctx := t.Context()
	s := b.open(t)
	for _, k := range []string{"a", "b", "c"} {
		require.NoError(t, s.Put(ctx, k, []byte(k), 0))
	}
	require.NoError(t, s.Delete(ctx, "a", "c", "never-put"))
	_, found := get(t, s, "a")
	assert.False(t, found)
	_, found = get(t, s, "c")
	assert.False(t, found)
	v, found := get(t, s, "b")
	assert.True(t, found, "Delete removed a key it was not given")
	assert.Equal(t, "b", string(v))
	require.NoError(t, s.Delete(ctx), "deleting nothing")
	require.NoError(t, s.Delete(ctx, "a"), "deleting a deleted key")
}

func testKeysByPrefix(t *testing.T, b backend) {
	ctx := t.Context()
	s := b.open(t)
	all := []string{
		"client:https://issuer.example",
		"state:n1",
		"token:alice:a", "token:alice:b", "token:alice:c",
		"token:bob:a",
		// Glob characters match themselves alone.
		"glob:a*b:1", "glob:aXb:1", "glob:a?b:1", "glob:a[b]:1", "glob:ab]:1", `glob:a\b:1`, "glob:ab:1",
	}
	for _, k := range all {
		require.NoError(t, s.Put(ctx, k, []byte("v"), 0))
	}
	keys := func(prefix string) []string {
		t.Helper()
		got, err := s.Keys(ctx, prefix)
		require.NoError(t, err)
		return got
	}
	assert.Equal(t, []string{"token:alice:a", "token:alice:b", "token:alice:c"}, keys("token:alice:"))
	assert.Equal(t, []string{"token:bob:a"}, keys("token:bob"))
	assert.Empty(t, keys("token:carol:"))
	assert.Equal(t, []string{"glob:a*b:1"}, keys("glob:a*b"))
	assert.Equal(t, []string{"glob:a?b:1"}, keys("glob:a?b"))
	assert.Equal(t, []string{"glob:a[b]:1"}, keys("glob:a[b]"))
	assert.Equal(t, []string{`glob:a\b:1`}, keys(`glob:a\b`))
	assert.Equal(t, []string{"glob:a*b:1", "glob:a?b:1", "glob:aXb:1", "glob:a[b]:1", `glob:a\b:1`, "glob:ab:1", "glob:ab]:1"}, keys("glob:a"))
	got := keys("")
	want := append([]string(nil), all...)
	assert.ElementsMatch(t, want, got)
	assert.IsNonDecreasing(t, got, "Keys is sorted")

	// Deleted keys are gone from the list.
	require.NoError(t, s.Delete(ctx, "token:alice:b"))
	assert.Equal(t, []string{"token:alice:a", "token:alice:c"}, keys("token:alice:"))
}

func testExpiry(t *testing.T, b backend) {
	ctx := t.Context()
	s := b.open(t)
	// Put first, state:taken expires no later than state:short, whose
	// expiry the test waits for.
	require.NoError(t, s.Put(ctx, "state:taken", []byte("taken"), b.shortTTL))
	require.NoError(t, s.Put(ctx, "state:short", []byte("short"), b.shortTTL))
	// A Put without a TTL drops the one the key had.
	require.NoError(t, s.Put(ctx, "state:renewed", []byte("old"), b.shortTTL))
	require.NoError(t, s.Put(ctx, "state:renewed", []byte("renewed"), 0))
	require.NoError(t, s.Put(ctx, "state:plain", []byte("plain"), 0))

	v, found := get(t, s, "state:short")
	assert.True(t, found, "a value with a TTL is gone before its TTL")
	assert.Equal(t, "short", string(v))
	keys, err := s.Keys(ctx, "state:")
	require.NoError(t, err)
	assert.Equal(t, []string{"state:plain", "state:renewed", "state:short", "state:taken"}, keys)

	b.expire(t, func() bool {
		_, found := get(t, s, "state:short")
		return !found
	})
	_, found, err = s.Take(ctx, "state:taken")
	require.NoError(t, err)
	assert.False(t, found, "an expired value was taken")
	keys, err = s.Keys(ctx, "state:")
	require.NoError(t, err)
	assert.Equal(t, []string{"state:plain", "state:renewed"}, keys, "Keys lists expired values")
	v, found = get(t, s, "state:renewed")
	assert.True(t, found, "a Put without a TTL kept the old one")
	assert.Equal(t, "renewed", string(v))
	_, found = get(t, s, "state:plain")
	assert.True(t, found)
}

func testBadArguments(t *testing.T, b backend) {
	ctx := t.Context()
	s := b.open(t)
	assert.ErrorIs(t, s.Put(ctx, "", []byte("v"), 0), store.ErrEmptyKey)
	_, _, err := s.Get(ctx, "")
	assert.ErrorIs(t, err, store.ErrEmptyKey)
	_, _, err = s.Take(ctx, "")
	assert.ErrorIs(t, err, store.ErrEmptyKey)
	assert.ErrorIs(t, s.Delete(ctx, "a", ""), store.ErrEmptyKey)
	assert.ErrorIs(t, s.Put(ctx, "k", []byte("v"), -time.Second), store.ErrNegativeTTL)
	_, found := get(t, s, "k")
	assert.False(t, found, "a refused Put stored its value")
}

func testClosed(t *testing.T, b backend) {
	ctx := context.Background()
	s := b.open(t)
	require.NoError(t, s.Put(ctx, "k", []byte("v"), 0))
	require.NoError(t, s.Close())
	require.NoError(t, s.Close(), "closing twice")
	assert.ErrorIs(t, s.Put(ctx, "k", []byte("v"), 0), store.ErrClosed)
	_, _, err := s.Get(ctx, "k")
	assert.ErrorIs(t, err, store.ErrClosed)
	_, _, err = s.Take(ctx, "k")
	assert.ErrorIs(t, err, store.ErrClosed)
	assert.ErrorIs(t, s.Delete(ctx, "k"), store.ErrClosed)
	_, err = s.Keys(ctx, "")
	assert.ErrorIs(t, err, store.ErrClosed)
}
