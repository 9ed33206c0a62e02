package reconcilers_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/musterd/musterd/pkg/events"
	"github.com/musterd/musterd/pkg/reconcilers"
)

type kindOnly string

func (k kindOnly) Kind() string { return string(k) }
func (kindOnly) Reconcile(context.Context, reconcilers.Request) reconcilers.Result {
	return reconcilers.Result{}
}
func (kindOnly) List(context.Context) ([]events.Key, error) { return nil, nil }

func TestRegistryHoldsOneReconcilerPerKind(t *testing.T) {
	reg, err := reconcilers.NewRegistry(kindOnly("Workflow"), kindOnly("MCPServer"))
	require.NoError(t, err)
	assert.Equal(t, []string{"MCPServer", "Workflow"}, reg.Kinds())
	r, ok := reg.Get("Workflow")
	require.True(t, ok)
	assert.Equal(t, "Workflow", r.Kind())
	_, ok = reg.Get("Other")
	assert.False(t, ok)

	assert.ErrorContains(t, reg.Register(kindOnly("Workflow")), `kind "Workflow" registered twice`)
	assert.Error(t, reg.Register(kindOnly("")))
	_, err = reconcilers.NewRegistry(kindOnly("A"), kindOnly("A"))
	assert.Error(t, err)
}

func TestPermanentErrorsAreFoundThroughWrapping(t *testing.T) {
	base := errors.New("spec.command is required")
	wrapped := fmt.Errorf("reconcile git: %w", reconcilers.Permanent(base))
	assert.True(t, reconcilers.IsPermanent(wrapped))
	assert.ErrorIs(t, wrapped, base)
	assert.False(t, reconcilers.IsPermanent(base))
	assert.NoError(t, reconcilers.Permanent(nil))
}
