package store

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Expired values nobody reads again are dropped by a Put once the sweep
// interval has passed, so memory does not fill with dead login states.
func TestMemorySweepsExpiredValuesOnPut(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := t.Context()
		s := NewMemory(MemoryOptions{SweepInterval: time.Minute}).(*memory)
		for _, k := range []string{"state:1", "state:2", "state:3"} {
			require.NoError(t, s.Put(ctx, k, []byte("v"), 10*time.Second))
		}
		require.NoError(t, s.Put(ctx, "token:kept", []byte("v"), 0))
		time.Sleep(59 * time.Second)
		require.NoError(t, s.Put(ctx, "token:a", []byte("v"), 0))
		assert.Len(t, s.entries, 5, "swept before the interval")
		time.Sleep(time.Second)
		require.NoError(t, s.Put(ctx, "token:b", []byte("v"), 0))
		assert.Len(t, s.entries, 3, "expired values left after a sweep")
		assert.Contains(t, s.entries, "token:kept")
	})
}

func TestKindShowsAKeyUpToItsFirstColon(t *testing.T) {
	assert.Equal(t, `"token:…"`, kind("token:alice:1"))
	assert.Equal(t, `"…"`, kind("alice"))
	assert.Equal(t, `":…"`, kind(":alice"))
}

func TestEscapeGlob(t *testing.T) {
	assert.Equal(t, `musterd:oauth:a\*b\?c\[d\]e\\f`, escapeGlob(`musterd:oauth:a*b?c[d]e\f`))
	assert.Equal(t, "\xff\\*", escapeGlob("\xff*"), "bytes not in UTF-8 stay as they are")
}
