package declare

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A file may carry fields musterd ignores (muster's harness writes
// spec.input_schema); a definition declared here may not, as muster's
// tools refuse unknown fields. Reading such a file works; an update of it
// names the field, which the caller did not send but the file holds.
func TestUnknownFieldsAreRefusedHereButReadFromFiles(t *testing.T) {
	s, dir := newFiles(t)
	ctx := context.Background()

	_, err := s.Create(ctx, flowKey, map[string]any{"input_schema": map[string]any{"type": "object"},
		"steps": []any{map[string]any{"id": "a", "tool": "t"}}})
	var invalid *InvalidError
	require.True(t, errors.As(err, &invalid), "%v", err)
	assert.ErrorContains(t, err, "spec.input_schema: unknown field")
	assert.NotContains(t, err.Error(), "ignored")
	_, statErr := os.Stat(filepath.Join(dir, "workflows", "flow.yaml"))
	assert.True(t, os.IsNotExist(statErr), "nothing written")

	require.NoError(t, os.MkdirAll(filepath.Join(dir, "workflows"), 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "workflows", "flow.yaml"), []byte(`apiVersion: muster.giantswarm.io/v1alpha1
kind: Workflow
metadata:
  name: flow
spec:
  input_schema:
    type: object
  steps:
  - id: a
    tool: t
`), 0o600))
	def, err := s.Get(ctx, flowKey)
	require.NoError(t, err, "a file is read leniently")
	assert.Equal(t, "workflows/flow.yaml", def.Where)
	require.NotNil(t, def.Object)

	_, err = s.Update(ctx, flowKey, map[string]any{"description": "d"}, "")
	assert.ErrorContains(t, err, "spec.input_schema: unknown field", "the update would declare the field through musterd")
}
