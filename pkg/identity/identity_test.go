package identity

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

// A user owns across sessions; without a user, each session owns alone;
// nobody is no owner.
func TestOwnerIsTheUserElseTheSession(t *testing.T) {
	alice1, alice2 := Identity{Subject: "alice", Session: "s1"}, Identity{Subject: "alice", Session: "s2"}
	assert.Equal(t, alice1.Owner(), alice2.Owner())
	assert.NotEqual(t, Identity{Session: "s1"}.Owner(), Identity{Session: "s2"}.Owner())
	assert.NotEqual(t, Identity{Subject: "s1"}.Owner(), Identity{Session: "s1"}.Owner(), "a user named like a session is not that session")
	assert.NotEqual(t, Identity{Issuer: "https://a", Subject: "alice"}.Owner(), Identity{Issuer: "https://b", Subject: "alice"}.Owner(),
		"one subject from two issuers is two users")
	assert.Empty(t, Identity{}.Owner())

	_, ok := From(context.Background())
	assert.False(t, ok)
	_, ok = From(With(context.Background(), Identity{}))
	assert.False(t, ok, "the zero Identity is nobody")
	got, ok := From(With(context.Background(), alice1))
	assert.True(t, ok)
	assert.Equal(t, alice1, got)
}

// An owner's log tag says its kind and is stable, and holds nothing of
// the session ID or the user.
func TestALogTagNamesNoCredential(t *testing.T) {
	owner := Identity{Session: "S3CR3T-SESSION-ID"}.Owner()
	tag := LogTag(owner)
	assert.Equal(t, tag, LogTag(owner))
	assert.True(t, strings.HasPrefix(tag, "session#"), tag)
	assert.NotContains(t, tag, "S3CR3T")
	assert.NotEqual(t, tag, LogTag(Identity{Session: "other"}.Owner()))
	user := LogTag(Identity{Subject: "alice", Issuer: "https://idp"}.Owner())
	assert.True(t, strings.HasPrefix(user, "user#"), user)
	assert.NotContains(t, user, "alice")
	assert.Empty(t, LogTag(""))
}
