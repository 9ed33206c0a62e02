package store

import (
	"encoding/base64"
	"fmt"
	"strings"
)

// DecodeKey reads an encryption key as configured, muster's encryptionKey
// or the content of its encryptionKeyFile: KeySize bytes in standard
// base64, surrounding whitespace (a file's last newline) ignored. Its
// errors never quote the text, which is a secret.
func DecodeKey(s string) ([]byte, error) {
	key, err := base64.StdEncoding.DecodeString(strings.TrimSpace(s))
	if err != nil {
		return nil, fmt.Errorf("oauth store: the encryption key is not base64 (%d bytes of key in standard base64 with padding, e.g. from `openssl rand -base64 %d`)", KeySize, KeySize)
	}
	if len(key) != KeySize {
		return nil, fmt.Errorf("oauth store: the encryption key has %d bytes, want %d (AES-256)", len(key), KeySize)
	}
	return key, nil
}
