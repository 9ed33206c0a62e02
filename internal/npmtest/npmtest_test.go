package npmtest

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestAMissingPackageSaysWhichTargetInstallsIt(t *testing.T) {
	_, err := find(Package{Name: "@example/absent", Bin: "no-such-bin", Target: "npm-nothing"})
	require.Error(t, err)
	if strings.Contains(err.Error(), "node is not installed") {
		assert.Contains(t, err.Error(), "@example/absent")
		return
	}
	assert.Contains(t, err.Error(), "@example/absent is not installed at ")
	assert.Contains(t, err.Error(), filepath.Join(".cache", "npm", "node_modules", ".bin", "no-such-bin"))
	assert.Contains(t, err.Error(), "run `make npm-nothing`")
}

func TestServerEverythingIsFoundWhereTheMakefileInstallsIt(t *testing.T) {
	bin := ServerEverything(t)
	assert.True(t, filepath.IsAbs(bin))
	assert.True(t, strings.HasSuffix(bin, filepath.Join(".cache", "npm", "node_modules", ".bin", "mcp-server-everything")), bin)
}
