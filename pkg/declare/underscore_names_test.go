package declare

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/musterd/musterd/internal/kubetest"
	"github.com/musterd/musterd/pkg/apis/muster/v1alpha1"
	"github.com/musterd/musterd/pkg/events"
)

// As muster's filesystem mode does, a name may have underscores where a
// Kubernetes name has hyphens: the file is written, read back and deleted
// under that name. Anything else that is not a Kubernetes name is still
// refused before it is used in a path.
func TestFilesTakeNamesWithUnderscores(t *testing.T) {
	s, dir := newFiles(t)
	ctx := context.Background()
	key := events.NewKey(v1alpha1.KindWorkflow, "", "special-chars-workflow_123")
	spec := map[string]any{"steps": []any{map[string]any{"id": "a", "tool": "t"}}}
	def, err := s.Create(ctx, key, spec)
	require.NoError(t, err)
	assert.Equal(t, "workflows/special-chars-workflow_123.yaml", def.Where)
	data, err := os.ReadFile(filepath.Join(dir, def.Where))
	require.NoError(t, err)
	docs, err := v1alpha1.DecodeFile(def.Where, data)
	require.NoError(t, err)
	require.Len(t, docs, 1)
	require.NoError(t, docs[0].Err)
	assert.Equal(t, key, docs[0].Key())
	require.NoError(t, s.Delete(ctx, key, ""))

	for _, name := range []string{"_a", "a_", "A_b", "a_/b", "../a_b"} {
		_, err := s.Create(ctx, events.NewKey(v1alpha1.KindWorkflow, "", name), spec)
		invalid, ok := err.(*InvalidError)
		require.True(t, ok, "%q: %v", name, err)
		assert.Contains(t, invalid.Error(), "metadata.name:", name)
	}
	entries, err := os.ReadDir(filepath.Join(dir, "workflows"))
	require.NoError(t, err)
	assert.Empty(t, entries)
}

// An API server refuses underscores in names: the Kubernetes store says so
// before it sends anything.
func TestKubeRefusesNamesWithUnderscores(t *testing.T) {
	cp := kubetest.Start(t, kubetest.Options{})
	s, err := NewKube(KubeOptions{Client: cp.Client})
	require.NoError(t, err)
	_, err = s.Create(context.Background(), events.NewKey(v1alpha1.KindWorkflow, "default", "a_b"),
		map[string]any{"steps": []any{map[string]any{"id": "a", "tool": "t"}}})
	invalid, ok := err.(*InvalidError)
	require.True(t, ok, "%v", err)
	assert.Contains(t, invalid.Error(), `metadata.name: "a_b" is not a valid Kubernetes name`)
}
