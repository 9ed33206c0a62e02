package config_test

import (
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"

	"github.com/musterd/musterd/pkg/oauth/config"
)

// kv sets the key at a dotted path below aggregator.oauth ("server.dex.
// issuerUrl", "server.trustedIssuers[0].jwksUrl") to a value.
type kv struct {
	path  string
	value any
}

var indexed = regexp.MustCompile(`^(.+)\[(\d+)\]$`)

// section builds the section's YAML from kvs, later ones on top.
func section(t *testing.T, kvs ...kv) string {
	t.Helper()
	root := map[string]any{}
	for _, s := range kvs {
		var cur any = root
		parts := strings.Split(s.path, ".")
		for i, part := range parts {
			last := i == len(parts)-1
			name, idx := part, -1
			if m := indexed.FindStringSubmatch(part); m != nil {
				name = m[1]
				idx, _ = strconv.Atoi(m[2])
			}
			parent := cur.(map[string]any)
			if idx < 0 {
				if last {
					parent[name] = s.value
					break
				}
				if _, ok := parent[name].(map[string]any); !ok {
					parent[name] = map[string]any{}
				}
				cur = parent[name]
				continue
			}
			list, _ := parent[name].([]any)
			for len(list) <= idx {
				list = append(list, map[string]any{})
			}
			if last {
				list[idx] = s.value
			}
			parent[name] = list
			cur = list[idx]
		}
	}
	data, err := yaml.Marshal(root)
	require.NoError(t, err)
	return string(data)
}

// load reads text as the section.
func load(t *testing.T, text string) (config.Config, error) {
	t.Helper()
	var n yaml.Node
	require.NoError(t, yaml.Unmarshal([]byte(text), &n))
	if n.Kind == 0 {
		return config.Load(nil, config.Options{})
	}
	return config.Load(&n, config.Options{})
}

// enabledServer is the least a server role that is on needs.
func enabledServer() []kv {
	return []kv{
		{"server.enabled", true},
		{"server.baseUrl", "https://muster.example.com"},
		{"server.dex.issuerUrl", "https://dex.example.com"},
		{"server.dex.clientId", "muster"},
	}
}
