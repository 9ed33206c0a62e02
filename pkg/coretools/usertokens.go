package coretools

import (
	"context"

	"github.com/musterd/musterd/pkg/apis/muster/v1alpha1"
	"github.com/musterd/musterd/pkg/events"
	"github.com/musterd/musterd/pkg/identity"
)

// A server whose spec says auth.forwardToken or auth.tokenExchange is
// given every signed-in user's token, at that user's first request, with
// no act of the user's: its URL (or its token endpoint) receives them all.
// Declaring one is the operator's: through files or resources, or through
// these tools with the operator's static token. A signed-in user may
// neither create one nor update one (re-pointing it would do the same);
// without OAuth every caller is the one identity, the operator, as in
// muster.

// usersTokensRefusal is why ctx's caller may not write the MCPServer at
// key with spec (the arguments' spec, of a create or an update); "" when
// it may.
func (p *Provider) usersTokensRefusal(ctx context.Context, key events.Key, spec map[string]any) string {
	who, ok := identity.From(ctx)
	if !ok || who.Subject == "" {
		return ""
	}
	if takesUsersTokens(spec) {
		return "only the operator may declare a server that is given the users' tokens (auth.forwardToken, auth.tokenExchange); a signed-in user may not"
	}
	if e, declared := p.opts.Index.Get(key); declared {
		if server, ok := e.Object.(*v1alpha1.MCPServer); ok && server != nil && server.Spec.Auth != nil &&
			(server.Spec.Auth.ForwardToken || server.Spec.Auth.TokenExchange != nil) {
			return "this server is given the users' tokens (auth.forwardToken, auth.tokenExchange): only the operator may change it"
		}
	}
	return ""
}

// takesUsersTokens reports whether a spec from the arguments asks for the
// users' tokens.
func takesUsersTokens(spec map[string]any) bool {
	auth, _ := spec["auth"].(map[string]any)
	if auth == nil {
		return false
	}
	forward, _ := auth["forwardToken"].(bool)
	_, exchange := auth["tokenExchange"]
	return forward || exchange
}
