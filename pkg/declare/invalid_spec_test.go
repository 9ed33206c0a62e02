package declare

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/musterd/musterd/pkg/apis/muster/v1alpha1"
	"github.com/musterd/musterd/pkg/events"
)

// A refused definition carries the spec that was checked, so that a caller
// can name its steps; the error's text never shows it.
func TestInvalidErrorCarriesTheSpecChecked(t *testing.T) {
	spec := map[string]any{"steps": []any{map[string]any{"id": "only-an-id"}}}
	_, _, err := Validate(events.NewKey(v1alpha1.KindWorkflow, "", "w"), spec, nil)
	invalid, ok := errors.AsType[*InvalidError](err)
	require.True(t, ok, "%v", err)
	assert.Equal(t, spec, invalid.Spec)
	require.Len(t, invalid.Errs, 1)
	assert.Equal(t, v1alpha1.CauseOneOf, invalid.Errs[0].Cause, "the validator's structure survives declare")
	assert.Equal(t, "spec.steps[0]", invalid.Errs[0].Path.String())
	assert.NotContains(t, err.Error(), "only-an-id")

	_, _, err = Validate(events.NewKey(v1alpha1.KindWorkflow, "", "../w"), spec, nil)
	invalid, ok = errors.AsType[*InvalidError](err)
	require.True(t, ok, "%v", err)
	assert.Nil(t, invalid.Spec, "a name refused checks no spec")
}
