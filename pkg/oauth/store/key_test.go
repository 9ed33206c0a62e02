package store_test

import (
	"encoding/base64"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/musterd/musterd/pkg/oauth/store"
)

func TestDecodeKey(t *testing.T) {
	encoded := base64.StdEncoding.EncodeToString(testKey)
	for _, in := range []string{encoded, encoded + "\n", "  " + encoded + "\r\n"} {
		key, err := store.DecodeKey(in)
		require.NoError(t, err, "%q", in)
		assert.Equal(t, testKey, key)
	}
	for in, want := range map[string]string{
		base64.StdEncoding.EncodeToString(testKey[:16]):       "has 16 bytes, want 32",
		base64.StdEncoding.EncodeToString(append(testKey, 1)): "has 33 bytes, want 32",
		"":                         "has 0 bytes, want 32",
		"not-base64-secret-text!!": "not base64",
		base64.RawURLEncoding.EncodeToString(testKey) + "_-": "not base64",
	} {
		_, err := store.DecodeKey(in)
		require.Error(t, err, "%q", in)
		assert.Contains(t, err.Error(), want)
		if in != "" {
			assert.NotContains(t, err.Error(), in, "the error quotes the key")
		}
	}
}
