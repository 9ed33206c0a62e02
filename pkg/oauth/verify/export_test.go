package verify

import (
	"context"

	"github.com/musterd/musterd/pkg/identity"
)

// ViaUserInfo is the userinfo check alone, for a test whose provider's
// tokens are JWTs (Dex's), which Verify would check as such.
func (v *Verifier) ViaUserInfo(ctx context.Context, raw string) (identity.Identity, error) {
	return v.viaUserInfo(ctx, raw)
}

// Cached is how many answers of userinfo are kept.
func (v *Verifier) Cached() int { return v.cache.len() }
