package main

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// core_config_get shows muster's MusterConfig, as muster encodes it (Go's
// field names), with the listen address, the prefix and the mode in force.
func TestCoreConfigGetShowsMustersShapeWithTheValuesInForce(t *testing.T) {
	cfg := defaultDaemonConfig()
	cfg.listen = "127.0.0.1:19901"
	cfg.toolPrefix = "m"
	data, err := json.Marshal(musterConfig(cfg))
	require.NoError(t, err)
	// The OAuth section has a test of its own (config_oauth_test.go).
	var doc map[string]any
	require.NoError(t, json.Unmarshal(data, &doc))
	require.Contains(t, doc["Aggregator"], "OAuth")
	delete(doc["Aggregator"].(map[string]any), "OAuth")
	data, err = json.Marshal(doc)
	require.NoError(t, err)
	assert.JSONEq(t, `{"Aggregator":{"Port":19901,"Host":"127.0.0.1","Transport":"streamable-http","MusterPrefix":"m"},"Namespace":"","Kubernetes":false}`, string(data))
}
