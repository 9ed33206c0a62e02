package reconcilers_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

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

func TestRetryAtCarriesItsTimeThroughWrapping(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	cause := errors.New("backing off")
	err := fmt.Errorf("reconcile: %w", reconcilers.RetryAt(cause, at))
	got, ok := reconcilers.RetryTime(err)
	assert.True(t, ok)
	assert.Equal(t, at, got)
	assert.ErrorIs(t, err, cause)
	assert.Equal(t, "reconcile: backing off", err.Error())
	assert.False(t, reconcilers.IsPermanent(err))

	assert.NoError(t, reconcilers.RetryAt(nil, at))
	_, ok = reconcilers.RetryTime(cause)
	assert.False(t, ok)
	assert.True(t, reconcilers.IsPermanent(reconcilers.RetryAt(reconcilers.Permanent(cause), at)), "permanent stays permanent")
}

// Observed holds its reconciler's keys by namespace and name; a key of
// another kind is still its own, and Keys gives every key back whole.
func TestObservedKeepsKeysOfEveryKindApart(t *testing.T) {
	var o reconcilers.Observed[int]
	wfA, wfB := events.NewKey("Workflow", "", "a"), events.NewKey("Workflow", "team", "a")
	srvA := events.NewKey("MCPServer", "", "a")
	_, ok := o.Get(wfA)
	assert.False(t, ok, "empty")
	o.Delete(wfA) // nothing to forget: no effect

	o.Set(wfA, 1)
	o.Set(wfB, 2)
	o.Set(srvA, 3)
	o.Set(events.Key{Kind: "Workflow", Name: "a"}, 4) // the same key as wfA, not canonical
	for k, want := range map[events.Key]int{wfA: 4, wfB: 2, srvA: 3} {
		got, ok := o.Get(k)
		assert.True(t, ok, "%s", k)
		assert.Equal(t, want, got, "%s", k)
	}
	assert.ElementsMatch(t, []events.Key{wfA, wfB, srvA}, o.Keys())

	o.Delete(srvA)
	_, ok = o.Get(srvA)
	assert.False(t, ok)
	got, ok := o.Get(wfA)
	assert.True(t, ok)
	assert.Equal(t, 4, got, "deleting a key of another kind leaves the one of the same name")
	o.Delete(wfA)
	assert.Equal(t, []events.Key{wfB}, o.Keys())
	assert.Equal(t, []events.Key{srvA, wfB}, o.Union([]events.Key{wfB, srvA}), "sorted, without repeats")
}
