package coretools

import "github.com/musterd/musterd/pkg/tooldef"

// The schema of an MCP server's auth argument, spec.auth of the
// definition. Clients compose the argument from it (muster's agent and
// CLI read it through describe_tool), so its property names, types, enums
// and required fields are muster's (internal/mcpserver's mcpServerArgs),
// and v1alpha1.MCPServerAuth's JSON names; the descriptions are
// musterd's. The rules on which fields go together are checked by
// v1alpha1's validation, where files and custom resources are checked too;
// the descriptions state them so that a client need not learn them from
// a refusal.

// authDescription is the auth argument's description, muster's: a
// client that lists arguments shows it beside the name.
const authDescription = "Authentication configuration for remote servers"

func schemaOf(typ, description string) map[string]any {
	return map[string]any{"type": typ, "description": description}
}

func stringList(description string) map[string]any {
	s := schemaOf(tooldef.Array, description)
	s["items"] = map[string]any{"type": tooldef.String}
	return s
}

func objectOf(description string, properties map[string]any, required ...string) map[string]any {
	s := schemaOf(tooldef.Object, description)
	s["properties"] = properties
	if len(required) > 0 {
		s["required"] = required
	}
	return s
}

// authArg is the auth argument of core_mcpserver_validate, _create and
// _update.
func authArg() tooldef.Arg {
	authType := schemaOf(tooldef.String, "How musterd authenticates to the server: oauth or none (the default)")
	authType["enum"] = []string{"oauth", "none"}

	secretRef := objectOf("Kubernetes Secret holding the OAuth client credentials musterd presents to the remote token endpoint", map[string]any{
		"name":            schemaOf(tooldef.String, "Name of the Secret"),
		"namespace":       schemaOf(tooldef.String, "Namespace of the Secret; the MCP server's own when not set"),
		"clientIdKey":     schemaOf(tooldef.String, "Key of the client ID in the Secret's data (default client-id)"),
		"clientSecretKey": schemaOf(tooldef.String, "Key of the client secret in the Secret's data (default client-secret)"),
	}, "name")

	tokenExchange := objectOf("RFC 8693 token exchange for SSO across clusters: the user's token is exchanged at the remote cluster's Dex for one it issues; preferred over forwardToken when both are set; not with authorizationServer when enabled", map[string]any{
		"enabled":                    schemaOf(tooldef.Boolean, "Whether to exchange tokens for this server"),
		"dexTokenEndpoint":           schemaOf(tooldef.String, "HTTPS URL of the remote Dex's token endpoint; required when enabled"),
		"expectedIssuer":             schemaOf(tooldef.String, "HTTPS issuer URL the exchanged token must carry (its iss claim), when it differs from dexTokenEndpoint's, as behind a proxy"),
		"connectorId":                schemaOf(tooldef.String, "ID of the remote Dex's OIDC connector that trusts the local Dex (letters, digits, _ and -, starting with a letter); required when enabled"),
		"scopes":                     schemaOf(tooldef.String, "Space-separated scopes of the exchanged token (default: openid profile email groups)"),
		"clientCredentialsSecretRef": secretRef,
	})

	authorizationServer := objectOf("The OAuth authorization server to use for a server that publishes no RFC 9728 protected resource metadata, so none is looked up; only with type oauth, and not with forwardToken or an enabled tokenExchange", map[string]any{
		"issuer": schemaOf(tooldef.String, "Issuer URL of the authorization server: HTTPS, without query, fragment or trailing slash"),
		"scopes": schemaOf(tooldef.String, "Space-separated scopes to request"),
	}, "issuer")

	return withSchema("auth", tooldef.Object, objectOf(authDescription, map[string]any{
		"type":                authType,
		"forwardToken":        schemaOf(tooldef.Boolean, "Forward the user's identity-provider token to the server (SSO) rather than logging in to it separately; not with authorizationServer"),
		"requiredAudiences":   stringList("Further audiences the forwarded token must carry, requested from the identity provider (for example dex-k8s-authenticator for Kubernetes OIDC)"),
		"tokenExchange":       tokenExchange,
		"authorizationServer": authorizationServer,
	}))
}
