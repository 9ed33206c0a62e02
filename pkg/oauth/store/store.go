package store

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
)

// Store keeps byte values under string keys, each with an optional expiry.
// Every implementation is safe for concurrent use. Values are copied in
// and out: a caller may reuse the slices it passes and gets.
type Store interface {
	// Put stores value under key, replacing any value and expiry it had.
	// A ttl of 0 means no expiry; a negative ttl is an error.
	Put(ctx context.Context, key string, value []byte, ttl time.Duration) error
	// Get returns the value under key; found is false when there is none
	// or it has expired.
	Get(ctx context.Context, key string) (value []byte, found bool, err error)
	// Take returns the value under key and deletes it in one step: of
	// concurrent Takes of one key, one alone finds it. For single-use
	// state such as a login's state parameter.
	Take(ctx context.Context, key string) (value []byte, found bool, err error)
	// Delete removes the keys; keys that do not exist are no error.
	Delete(ctx context.Context, keys ...string) error
	// Keys returns the keys that start with prefix and have not expired,
	// sorted; every key for an empty prefix. For finding every token of
	// one user at logout or revocation.
	Keys(ctx context.Context, prefix string) ([]string, error)
	// Close releases the store. Every later call returns ErrClosed;
	// closing twice is no error.
	Close() error
}

var (
	// ErrClosed is returned by every call on a closed Store.
	ErrClosed = errors.New("oauth store: closed")
	// ErrEmptyKey is returned for an empty key: every value needs a name.
	ErrEmptyKey = errors.New("oauth store: empty key")
	// ErrNegativeTTL is returned by Put for a ttl below zero.
	ErrNegativeTTL = errors.New("oauth store: negative TTL")
	// ErrDecrypt is returned by an [Encrypted] store for a value that does
	// not open with its key: sealed with another key, moved from another
	// key, altered, or not sealed at all.
	ErrDecrypt = errors.New("oauth store: value does not decrypt (another encryption key, moved from another store key, or altered)")
)

// kind returns what an error may say of a key: its part up to and
// including the first colon, the kind of state by convention ("token:",
// "state:"), never the rest, which may hold a user's ID or a nonce.
func kind(key string) string {
	if i := strings.IndexByte(key, ':'); i >= 0 {
		return fmt.Sprintf("%q", key[:i+1]+"…")
	}
	return `"…"`
}

// check validates the arguments of Put, Get and Take.
func check(key string, ttl time.Duration) error {
	if key == "" {
		return ErrEmptyKey
	}
	if ttl < 0 {
		return ErrNegativeTTL
	}
	return nil
}
