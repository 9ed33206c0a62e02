package coretools

import (
	"reflect"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/musterd/musterd/pkg/apis/muster/v1alpha1"
	"github.com/musterd/musterd/pkg/resources"
)

// shape is a property schema without its descriptions: what a client
// composing arguments relies on (names, types, enums, required fields).
func shape(t *testing.T, schema map[string]any) map[string]any {
	t.Helper()
	out := map[string]any{}
	for k, v := range schema {
		switch k {
		case "description":
			assert.NotEmpty(t, v, "every property is described")
		case "properties":
			props := map[string]any{}
			for name, p := range v.(map[string]any) {
				props[name] = shape(t, p.(map[string]any))
			}
			out[k] = props
		case "items":
			out[k] = shape(t, v.(map[string]any))
		default:
			out[k] = v
		}
	}
	return out
}

func str() map[string]any     { return map[string]any{"type": "string"} }
func boolean() map[string]any { return map[string]any{"type": "boolean"} }

// mustersAuth is the shape of the auth argument muster advertises
// (internal/mcpserver's mcpServerArgs), descriptions left out.
var mustersAuth = map[string]any{
	"type": "object",
	"properties": map[string]any{
		"type":              map[string]any{"type": "string", "enum": []string{"oauth", "none"}},
		"forwardToken":      boolean(),
		"requiredAudiences": map[string]any{"type": "array", "items": str()},
		"authorizationServer": map[string]any{
			"type":       "object",
			"properties": map[string]any{"issuer": str(), "scopes": str()},
			"required":   []string{"issuer"},
		},
		"tokenExchange": map[string]any{
			"type": "object",
			"properties": map[string]any{
				"enabled":          boolean(),
				"dexTokenEndpoint": str(),
				"expectedIssuer":   str(),
				"connectorId":      str(),
				"scopes":           str(),
				"clientCredentialsSecretRef": map[string]any{
					"type":       "object",
					"properties": map[string]any{"name": str(), "namespace": str(), "clientIdKey": str(), "clientSecretKey": str()},
					"required":   []string{"name"},
				},
			},
		},
	},
}

func TestTheAuthArgumentIsAdvertisedAsMusterAdvertisesIt(t *testing.T) {
	p, err := New(Options{Index: resources.New(), Statuses: &statuses{}, Store: newHarness(t).store})
	require.NoError(t, err)
	seen := 0
	for _, tool := range p.Tools() {
		switch tool.Name {
		case "core_mcpserver_validate", "core_mcpserver_create", "core_mcpserver_update":
		default:
			continue
		}
		seen++
		auth, ok := tool.InputSchema.(map[string]any)["properties"].(map[string]any)["auth"].(map[string]any)
		require.True(t, ok, "%s has an auth argument", tool.Name)
		assert.Equal(t, "Authentication configuration for remote servers", auth["description"], tool.Name)
		assert.Equal(t, mustersAuth, shape(t, auth), tool.Name)
	}
	assert.Equal(t, 3, seen)
}

// The schema names the fields the definition has: each object of the
// schema has exactly the JSON fields of its v1alpha1 type, so an argument
// composed from the schema decodes, and a field added to the type is
// advertised.
func TestTheAuthSchemaHasTheFieldsOfTheType(t *testing.T) {
	auth := authArg().Schema
	var check func(path string, schema map[string]any, typ reflect.Type)
	check = func(path string, schema map[string]any, typ reflect.Type) {
		props := schema["properties"].(map[string]any)
		var fields []string
		for f := range typ.Fields() {
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			fields = append(fields, name)
			sub, ok := props[name].(map[string]any)
			if !assert.True(t, ok, "%s.%s is advertised", path, name) {
				continue
			}
			ft := f.Type
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				check(path+"."+name, sub, ft)
			}
		}
		assert.ElementsMatch(t, fields, keys(props), "%s: the schema's properties are the type's fields", path)
	}
	check("auth", auth, reflect.TypeFor[v1alpha1.MCPServerAuth]())
}

func keys(m map[string]any) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}
