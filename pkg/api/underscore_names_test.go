package api_test

import (
	"net/http"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"

	"github.com/musterd/musterd/pkg/api/apitest"
)

// A name with underscores where Kubernetes has hyphens is a name of files
// (as in muster's filesystem mode): the API looks it up, and finds it.
func TestNamesWithUnderscoresAreLookedUp(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := apitest.New(t, nil)
		code, body := get(t, f, "/api/v1/resources/wf/default/no-such_flow")
		assert.Equal(t, http.StatusNotFound, code, body)
		f.Declare("workflows/special-chars-workflow_123.yaml", "apiVersion: muster.giantswarm.io/v1alpha1\nkind: Workflow\nspec:\n  steps:\n  - id: a\n    tool: t\n")
		code, body = get(t, f, "/api/v1/resources/wf/default/special-chars-workflow_123")
		assert.Equal(t, http.StatusOK, code, body)
	})
}
