package mcpserve

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// core_config_get answers Options.Config as JSON, and an empty object
// without it: workflows written for muster name it as a step.
func TestCoreConfigGetAnswersTheConfigurationGiven(t *testing.T) {
	h := newHarness(t, func(o *setup) {
		o.core.Config = func() any {
			return map[string]any{"Aggregator": map[string]any{"Port": 8090, "Host": "127.0.0.1"}, "Kubernetes": false}
		}
	})
	cs := h.connect(PathDirect, musterProtocol, nil)
	res := call(t, cs, "core_config_get", nil)
	assert.False(t, res.IsError)
	assert.JSONEq(t, `{"Aggregator":{"Port":8090,"Host":"127.0.0.1"},"Kubernetes":false}`, text(t, res))

	h = newHarness(t, nil)
	cs = h.connect(PathDirect, musterProtocol, nil)
	assert.JSONEq(t, `{}`, text(t, call(t, cs, "core_config_get", nil)))
}
