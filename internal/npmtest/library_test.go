package npmtest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestAMissingLibrarySaysWhichTargetInstallsIt(t *testing.T) {
	_, err := find(Package{Name: "@example/absent-lib", Target: "npm-nothing"})
	require.Error(t, err)
	if strings.Contains(err.Error(), "node is not installed") {
		assert.Contains(t, err.Error(), "@example/absent-lib")
		return
	}
	assert.Contains(t, err.Error(), "@example/absent-lib is not installed at ")
	assert.Contains(t, err.Error(), filepath.Join(".cache", "npm", "node_modules", "@example", "absent-lib"))
	assert.Contains(t, err.Error(), "run `make npm-nothing`")
}

func TestTheTypeScriptSDKIsFoundWhereTheMakefileInstallsIt(t *testing.T) {
	dir := TypeScriptSDK(t)
	assert.True(t, filepath.IsAbs(dir))
	assert.True(t, strings.HasSuffix(dir, filepath.Join(".cache", "npm", "node_modules", "@modelcontextprotocol", "sdk")), dir)
	_, err := os.Stat(filepath.Join(dir, "dist", "esm", "client", "streamableHttp.js"))
	require.NoError(t, err, "its ESM client is where the scripts import it from")
}
