package tmplfuncs_test

import (
	"strings"
	"testing"
	"text/template"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/musterd/musterd/pkg/tmplfuncs"
)

// A template cannot read the daemon's environment nor resolve a host: the
// functions do not exist, so the template does not even parse.
func TestNoEnvironmentNorNetwork(t *testing.T) {
	t.Setenv("MUSTERD_TOKEN", "sk-secret-token")
	for _, src := range []string{
		`{{ env "MUSTERD_TOKEN" }}`,
		`{{ expandenv "$MUSTERD_TOKEN" }}`,
		`{{ getHostByName "localhost" }}`,
	} {
		_, err := template.New("t").Funcs(tmplfuncs.Funcs()).Parse(src)
		require.Error(t, err, src)
		assert.Contains(t, err.Error(), "not defined", src)
	}
	// The rest of sprig is there.
	tmpl, err := template.New("t").Funcs(tmplfuncs.Funcs()).Parse(`{{ "ada" | upper | quote }}`)
	require.NoError(t, err)
	var b strings.Builder
	require.NoError(t, tmpl.Execute(&b, nil))
	assert.Equal(t, `"ADA"`, b.String())
}
