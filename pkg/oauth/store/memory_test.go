package store_test

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/musterd/musterd/pkg/oauth/store"
)

// A value lives exactly its TTL: found a nanosecond before, gone at it.
func TestMemoryExpiresExactlyAtTheTTL(t *testing.T) {
	ctx := t.Context()
	clock := newFakeClock()
	s := store.NewMemory(store.MemoryOptions{Now: clock.Now})
	require.NoError(t, s.Put(ctx, "state:n", []byte("v"), 10*time.Minute))
	clock.Advance(10*time.Minute - time.Nanosecond)
	_, found := get(t, s, "state:n")
	assert.True(t, found, "gone before its TTL")
	keys, err := s.Keys(ctx, "")
	require.NoError(t, err)
	assert.Equal(t, []string{"state:n"}, keys)
	clock.Advance(time.Nanosecond)
	_, found = get(t, s, "state:n")
	assert.False(t, found, "there at its TTL")
}

// Without MemoryOptions.Now the store reads the time of the process,
// which synctest makes virtual.
func TestMemoryDefaultsToTheProcessClock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := t.Context()
		s := store.NewMemory(store.MemoryOptions{})
		defer s.Close()
		require.NoError(t, s.Put(ctx, "state:n", []byte("v"), 10*time.Minute))
		time.Sleep(10*time.Minute - time.Nanosecond)
		_, found := get(t, s, "state:n")
		assert.True(t, found, "gone before its TTL")
		time.Sleep(time.Nanosecond)
		_, found = get(t, s, "state:n")
		assert.False(t, found, "there at its TTL")
	})
}
