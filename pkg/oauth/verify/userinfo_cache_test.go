package verify

import (
	"crypto/sha256"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/musterd/musterd/pkg/identity"
)

// The cache holds at most its bound: a full one drops the answers past
// their deadline first, then the one due soonest; an answer is gone at
// its deadline.
func TestTheUserInfoCacheIsBounded(t *testing.T) {
	now := time.Unix(1_000_000, 0)
	c := newUserInfoCache(3)
	key := func(i int) [sha256.Size]byte { return sha256.Sum256(fmt.Appendf(nil, "token-%d", i)) }
	who := func(i int) identity.Identity { return identity.Identity{Subject: fmt.Sprint(i), Issuer: "https://idp"} }

	c.put(key(1), who(1), now.Add(30*time.Second), now)
	c.put(key(2), who(2), now.Add(10*time.Second), now)
	c.put(key(3), who(3), now.Add(50*time.Second), now)
	c.put(key(4), who(4), now.Add(40*time.Second), now)
	assert.Equal(t, 3, c.len())
	_, ok := c.get(key(2), now)
	assert.False(t, ok, "the one due soonest made room")
	for _, i := range []int{1, 3, 4} {
		got, ok := c.get(key(i), now)
		assert.True(t, ok, i)
		assert.Equal(t, who(i), got)
	}

	later := now.Add(35 * time.Second)
	c.put(key(5), who(5), later.Add(60*time.Second), later)
	_, ok = c.get(key(1), later)
	assert.False(t, ok, "past its deadline: dropped")
	_, ok = c.get(key(3), later)
	assert.True(t, ok, "before its deadline: kept")
	_, ok = c.get(key(4), now.Add(40*time.Second))
	assert.False(t, ok, "gone at its deadline")
}
