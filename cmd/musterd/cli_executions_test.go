package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/musterd/musterd/pkg/api"
	"github.com/musterd/musterd/pkg/api/apitest"
	"github.com/musterd/musterd/pkg/apis/muster/v1alpha1"
	"github.com/musterd/musterd/pkg/events"
	"github.com/musterd/musterd/pkg/resources"
	"github.com/musterd/musterd/pkg/workflowrun"
)

// The CLI passes -limit on as given, and the daemon's engine judges it:
// -limit 0 is its error naming the field, not a page of the default size.
func TestCLIGetExecutionsLimitIsTheDaemonsToCheck(t *testing.T) {
	engine, err := workflowrun.New(workflowrun.Options{Index: resources.New(),
		Status: func(events.Key) (v1alpha1.WorkflowStatus, bool) { return v1alpha1.WorkflowStatus{}, false }})
	require.NoError(t, err)
	f := apitest.New(t, func(o *api.Options) { o.Executions = engine })

	assert.Equal(t, result{code: 1, stderr: "musterd: limit must be at least 1 (minimum value)\n"},
		runCLI(f, "get", "executions", "-limit", "0"))
	assert.Equal(t, result{code: 1, stderr: "musterd: limit must be at most 1000 (maximum value)\n"},
		runCLI(f, "get", "executions", "-limit", "1001"))
	assert.Equal(t, result{code: 0, stdout: `{
  "executions": [],
  "total": 0,
  "limit": 50,
  "offset": 0,
  "has_more": false
}
`}, runCLI(f, "get", "executions", "-o", "json"), "the flag's default is the daemon's")
}
