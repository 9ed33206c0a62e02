package supervisor_test

import (
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/musterd/musterd/pkg/apis/muster/v1alpha1"
	"github.com/musterd/musterd/pkg/supervisor"
)

// A remote server's headers go to its origin alone: a redirect to
// another origin is not followed, and the other origin never sees them.
func TestARemoteServersHeadersNeverFollowARedirectElsewhere(t *testing.T) {
	t.Parallel()
	const secret = "origin-bound-secret"
	var leaked atomic.Int64
	elsewhere := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Api-Key") != "" {
			leaked.Add(1)
		}
		http.Error(w, "nothing here", http.StatusNotFound)
	}))
	t.Cleanup(elsewhere.Close)
	redirecting := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, elsewhere.URL+"/mcp", http.StatusTemporaryRedirect)
	}))
	t.Cleanup(redirecting.Close)

	h := newHarness(t, supervisor.Options{})
	spec := remote(v1alpha1.MCPServerTypeStreamableHTTP, redirecting.URL+"/mcp")
	spec.Headers = map[string]string{"X-Api-Key": secret}
	obs := h.ensure(t, key("redirecting"), spec)
	assert.Equal(t, v1alpha1.MCPServerStateFailed, obs.State)
	assert.Contains(t, obs.LastError, "a redirect to another origin")
	assert.Zero(t, leaked.Load(), "the other origin got the server's header")
}
