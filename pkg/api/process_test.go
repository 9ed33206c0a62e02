package api_test

import (
	"encoding/json"
	"net/http"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/musterd/musterd/pkg/api"
	"github.com/musterd/musterd/pkg/api/apitest"
	"github.com/musterd/musterd/pkg/api/types"
	"github.com/musterd/musterd/pkg/events"
)

// A running stdio server's object names its process, read when the object
// is; a server with none running and a workflow name none.
func TestAnObjectNamesItsServersProcess(t *testing.T) {
	synctest.Test(t, testAnObjectNamesItsServersProcess)
}

func testAnObjectNamesItsServersProcess(t *testing.T) {
	pids := map[string]int{"git": 4242}
	f := apitest.New(t, func(o *api.Options) {
		o.Process = func(k events.Key) (int, bool) {
			pid, ok := pids[k.Name]
			return pid, ok
		}
	})
	f.Declare("mcpservers/git.yaml", gitServer)
	f.Declare("workflows/greet.yaml", greetWorkflow)

	process := func(path string) *types.Process {
		code, body := get(t, f, path)
		require.Equal(t, http.StatusOK, code, body)
		var o types.Object
		require.NoError(t, json.Unmarshal([]byte(body), &o))
		return o.Process
	}
	assert.Equal(t, &types.Process{PID: 4242}, process("/api/v1/resources/mcpservers/default/git"))
	assert.Nil(t, process("/api/v1/resources/workflows/team-a/greet"))

	delete(pids, "git")
	assert.Nil(t, process("/api/v1/resources/mcpservers/default/git"), "stopped: no process")
	pids["git"] = 0
	assert.Nil(t, process("/api/v1/resources/mcpservers/default/git"), "no pid is no process")
	pids["greet"] = 7
	assert.Nil(t, process("/api/v1/resources/workflows/team-a/greet"), "only servers have processes")
}
