package api_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/musterd/musterd/pkg/api"
	"github.com/musterd/musterd/pkg/api/apitest"
	"github.com/musterd/musterd/pkg/api/types"
	"github.com/musterd/musterd/pkg/events"
)

// A server's object carries its recent calls with their totals, in the
// list and alone; a server without calls and a workflow carry none.
func TestAnObjectCarriesItsServersRecentCalls(t *testing.T) {
	synctest.Test(t, testAnObjectCarriesItsServersRecentCalls)
}

func testAnObjectCarriesItsServersRecentCalls(t *testing.T) {
	start := time.Date(2026, 11, 21, 9, 50, 0, 0, time.UTC)
	history := map[string]types.Calls{}
	asked := map[string]int{}
	f := apitest.New(t, func(o *api.Options) {
		o.Calls = func(k events.Key) types.Calls {
			asked[k.Kind+"/"+k.Name]++
			if c, ok := history[k.Name]; ok {
				return c
			}
			return types.Calls{Start: start, IntervalSeconds: 10, Calls: make([]int, 3), Errors: make([]int, 3)}
		}
	})
	f.Declare("mcpservers/git.yaml", gitServer)
	f.Declare("workflows/greet.yaml", greetWorkflow)

	object := func(path string) types.Object {
		code, body := get(t, f, path)
		require.Equal(t, http.StatusOK, code, body)
		var o types.Object
		require.NoError(t, json.Unmarshal([]byte(body), &o))
		return o
	}
	assert.Nil(t, object("/api/v1/resources/mcpservers/default/git").Calls, "no calls: none shown")

	history["git"] = types.Calls{Start: start, IntervalSeconds: 10, Calls: []int{0, 12, 3}, Errors: []int{0, 1, 0}}
	code, body := get(t, f, "/api/v1/resources/mcpservers/default/git")
	require.Equal(t, http.StatusOK, code, body)
	var compact bytes.Buffer
	require.NoError(t, json.Compact(&compact, []byte(body)))
	assert.Contains(t, compact.String(), `"calls":{"start":"2026-11-21T09:50:00Z","intervalSeconds":10,"calls":[0,12,3],"errors":[0,1,0],"totalCalls":15,"totalErrors":1}`)

	code, body = get(t, f, "/api/v1/resources?kind=mcpservers")
	require.Equal(t, http.StatusOK, code, body)
	var list struct{ Items []types.Object }
	require.NoError(t, json.Unmarshal([]byte(body), &list))
	require.Len(t, list.Items, 1)
	assert.Equal(t, &types.Calls{Start: start, IntervalSeconds: 10, Calls: []int{0, 12, 3}, Errors: []int{0, 1, 0}, TotalCalls: 15, TotalErrors: 1},
		list.Items[0].Calls, "in the list too")

	assert.Nil(t, object("/api/v1/resources/workflows/team-a/greet").Calls, "a workflow has no calls")
	assert.Zero(t, asked["Workflow/greet"], "nor is asked for them")
}
