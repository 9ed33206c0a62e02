package store

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"fmt"
	"time"
)

// KeySize is the length of an encryption key: AES-256.
const KeySize = 32

// sealVersion is the first byte of every sealed value, so that another
// format can be told apart later.
const sealVersion byte = 1

// aadDomain starts the additional data of every value, so that a value
// sealed for another purpose with the same key does not open here.
const aadDomain = "musterd oauth store v1\x00"

// encrypted seals every value with AES-256-GCM before the inner store sees
// it. Keys stay in the clear: they name values and are matched by prefix.
type encrypted struct {
	inner Store
	aead  cipher.AEAD
}

// Encrypted returns a Store that keeps every value in s sealed with
// AES-256-GCM under key (KeySize bytes): a fresh random nonce per value,
// and the store key bound as additional data, so that a value copied to
// another key, sealed with another encryption key, or altered, fails with
// [ErrDecrypt] instead of giving something else back. Keys are not
// encrypted: put nothing secret in a key (store musterd's own tokens by
// their hash). A Take whose value does not decrypt still deletes it.
func Encrypted(s Store, key []byte) (Store, error) {
	if len(key) != KeySize {
		return nil, fmt.Errorf("oauth store: the encryption key has %d bytes, want %d (AES-256)", len(key), KeySize)
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, fmt.Errorf("oauth store: encryption key: %w", err)
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, fmt.Errorf("oauth store: encryption key: %w", err)
	}
	return &encrypted{inner: s, aead: aead}, nil
}

// String keeps the key and values out of a store printed by mistake.
func (e *encrypted) String() string { return fmt.Sprintf("encrypted %v", e.inner) }

func additionalData(key string) []byte {
	return []byte(aadDomain + key)
}

// seal returns version || nonce || ciphertext and tag.
func (e *encrypted) seal(key string, value []byte) ([]byte, error) {
	out := make([]byte, 1+e.aead.NonceSize(), 1+e.aead.NonceSize()+len(value)+e.aead.Overhead())
	out[0] = sealVersion
	if _, err := rand.Read(out[1:]); err != nil {
		return nil, fmt.Errorf("oauth store: a nonce: %w", err)
	}
	return e.aead.Seal(out, out[1:], value, additionalData(key)), nil
}

func (e *encrypted) open(key string, sealed []byte) ([]byte, error) {
	n := e.aead.NonceSize()
	if len(sealed) < 1+n+e.aead.Overhead() || sealed[0] != sealVersion {
		return nil, fmt.Errorf("%w: under %s", ErrDecrypt, kind(key))
	}
	value, err := e.aead.Open(nil, sealed[1:1+n], sealed[1+n:], additionalData(key))
	if err != nil {
		return nil, fmt.Errorf("%w: under %s", ErrDecrypt, kind(key))
	}
	if value == nil {
		value = []byte{}
	}
	return value, nil
}

func (e *encrypted) Put(ctx context.Context, key string, value []byte, ttl time.Duration) error {
	if err := check(key, ttl); err != nil {
		return err
	}
	sealed, err := e.seal(key, value)
	if err != nil {
		return err
	}
	return e.inner.Put(ctx, key, sealed, ttl)
}

func (e *encrypted) Get(ctx context.Context, key string) ([]byte, bool, error) {
	sealed, found, err := e.inner.Get(ctx, key)
	return e.opened(key, sealed, found, err)
}

func (e *encrypted) Take(ctx context.Context, key string) ([]byte, bool, error) {
	sealed, found, err := e.inner.Take(ctx, key)
	return e.opened(key, sealed, found, err)
}

func (e *encrypted) opened(key string, sealed []byte, found bool, err error) ([]byte, bool, error) {
	if err != nil || !found {
		return nil, false, err
	}
	value, err := e.open(key, sealed)
	if err != nil {
		return nil, false, err
	}
	return value, true, nil
}

func (e *encrypted) Delete(ctx context.Context, keys ...string) error {
	return e.inner.Delete(ctx, keys...)
}

func (e *encrypted) Keys(ctx context.Context, prefix string) ([]string, error) {
	return e.inner.Keys(ctx, prefix)
}

func (e *encrypted) Close() error { return e.inner.Close() }
