package supervisor_test

import (
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/musterd/musterd/pkg/apis/muster/v1alpha1"
	"github.com/musterd/musterd/pkg/supervisor"
)

// refusals asks a protected mcp-fake how many requests it refused.
func refusals(t *testing.T, mcpURL string) int {
	t.Helper()
	resp, err := http.Get(strings.TrimSuffix(mcpURL, "/mcp") + "/refusals")
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	n, err := strconv.Atoi(strings.TrimSpace(string(body)))
	require.NoError(t, err)
	return n
}

// A remote server that answers 401 is Auth Required, with its challenge
// in the error: no failure counted, no retry armed, and no knocking again
// for the same spec. A spec that brings the credential connects.
func TestARemoteServerThatAnswers401IsAuthRequiredAndNotRetried(t *testing.T) {
	t.Parallel()
	const token = "the-bearer-token-value"
	h := newHarness(t, supervisor.Options{RestartBackoff: supervisor.Backoff{Base: 10 * time.Millisecond}})
	url, _ := startHTTPFake(t, "-tools", "secret", "-require-bearer", token)
	for _, typ := range []v1alpha1.MCPServerType{v1alpha1.MCPServerTypeStreamableHTTP, v1alpha1.MCPServerTypeSSE} {
		endpoint := url
		if typ == v1alpha1.MCPServerTypeSSE {
			endpoint = strings.TrimSuffix(url, "/mcp") + "/sse"
		}
		k := key("protected-" + string(typ))
		spec := remote(typ, endpoint)
		obs := h.ensure(t, k, spec)
		assert.Equal(t, v1alpha1.MCPServerStateAuthRequired, obs.State, typ)
		assert.Contains(t, obs.LastError, "authorization required: "+endpoint+" answered 401 Unauthorized", typ)
		assert.Contains(t, obs.LastError, "resource metadata "+strings.TrimSuffix(url, "/mcp")+"/.well-known/oauth-protected-resource", typ)
		assert.Zero(t, obs.ConsecutiveFailures, "%s: a 401 is no failure", typ)
		assert.Zero(t, obs.NextRetryAfter, "%s: nothing to retry", typ)
		assert.Empty(t, obs.Tools, typ)

		knocked := refusals(t, url)
		again, err := h.sup.Ensure(t.Context(), k, spec)
		require.NoError(t, err, "%s: waiting for a credential is no backoff", typ)
		assert.Equal(t, v1alpha1.MCPServerStateAuthRequired, again.State, typ)
		assert.Equal(t, obs, h.settle(t, k), typ)
		assert.Equal(t, knocked, refusals(t, url), "%s: the same spec does not knock again", typ)

		spec.Headers = map[string]string{"Authorization": "Bearer " + token}
		obs = h.ensure(t, k, spec)
		assert.Equal(t, connected, obs.State, "%s: the credential came with the spec", typ)
		assert.Equal(t, []string{"secret"}, obs.Tools, typ)
		assert.Empty(t, obs.LastError, typ)
		assert.NotContains(t, fmt.Sprintf("%+v %s", h.rec.of(k), h.logs.String()), token, typ)
	}
}
