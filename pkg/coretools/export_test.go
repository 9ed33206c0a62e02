package coretools

import (
	"crypto/sha256"
	"encoding/hex"
)

// declareVersion is declare's version of a file's content: its sha256.
func declareVersion(data []byte) string {
	sum := sha256.Sum256(data)
	return "sha256:" + hex.EncodeToString(sum[:])
}
