package coretools

import (
	"maps"
	"strings"
)

// mcpServerSpec is an MCP server's spec from a call's arguments. muster's
// tools take an authorizationServer issuer with a trailing slash and write
// it without (RFC 8414 issuers have none; internal/mcpserver's
// convertRequestToCRD), so musterd writes what muster writes rather than
// refusing what the CRD's pattern refuses in a file. The caller's
// arguments are left as they are.
func mcpServerSpec(a args) map[string]any {
	spec := a.spec()
	auth, ok := spec["auth"].(map[string]any)
	if !ok {
		return spec
	}
	as, ok := auth["authorizationServer"].(map[string]any)
	if !ok {
		return spec
	}
	issuer, ok := as["issuer"].(string)
	if !ok || !strings.HasSuffix(issuer, "/") {
		return spec
	}
	as = maps.Clone(as)
	as["issuer"] = strings.TrimSuffix(issuer, "/")
	auth = maps.Clone(auth)
	auth["authorizationServer"] = as
	spec["auth"] = auth
	return spec
}
