package controls

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/musterd/musterd/pkg/apis/muster/v1alpha1"
	"github.com/musterd/musterd/pkg/bus"
	"github.com/musterd/musterd/pkg/events"
	"github.com/musterd/musterd/pkg/resources"
	"github.com/musterd/musterd/pkg/services"
	"github.com/musterd/musterd/pkg/statusync"
)

type fakeCoordinator struct {
	mu       sync.Mutex
	disabled map[string]bool
}

func (f *fakeCoordinator) KindEnabled(k string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return !f.disabled[k]
}

func (f *fakeCoordinator) SetKindEnabled(k string, enabled bool) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.disabled[k] = !enabled
	return nil
}

// noStatuses keeps no status; it records the kinds it is told are
// disabled.
type noStatuses struct{ disabled map[string]bool }

func (noStatuses) Get(events.Key) (statusync.Status, bool) { return statusync.Status{}, false }
func (noStatuses) List() []statusync.Status                { return nil }
func (s noStatuses) SetKindDisabled(kind string, disabled bool) {
	s.disabled[kind] = disabled
}

type fixture struct {
	c        *Controller
	bus      *bus.Bus
	index    *resources.Index
	coord    *fakeCoordinator
	ov       *services.Overrides
	statuses noStatuses
	mu       sync.Mutex
	received []events.Event
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	f := &fixture{bus: bus.New(bus.Options{}), index: resources.New(), coord: &fakeCoordinator{disabled: map[string]bool{}},
		statuses: noStatuses{disabled: map[string]bool{}}}
	f.bus.Start()
	t.Cleanup(f.bus.Close)
	sub, err := f.bus.Subscribe(bus.SubscriberOptions{Name: "test", Delivery: bus.Lossy(1024), Handlers: []bus.Handler{
		bus.On(func(e ReconciliationToggled) { f.record(e) }),
		bus.On(func(e ResyncRequested) { f.record(e) }),
		bus.On(func(e events.ReconciliationTriggered) { f.record(e) }),
	}})
	require.NoError(t, err)
	t.Cleanup(sub.Unsubscribe)
	f.ov, err = services.New(nil)
	require.NoError(t, err)
	f.c, err = New(Options{Bus: f.bus, Index: f.index, Overrides: f.ov, Coordinator: f.coord,
		Kinds: []string{v1alpha1.KindMCPServer, v1alpha1.KindWorkflow},
		List: func(_ context.Context, kind string) ([]events.Key, error) {
			return append(f.index.Keys(kind), events.NewKey(kind, "", "orphan")), nil
		},
		Statuses:     f.statuses,
		ServerStatus: func(events.Key) (v1alpha1.MCPServerStatus, bool) { return v1alpha1.MCPServerStatus{}, false },
		WaitTimeout:  time.Millisecond,
	})
	require.NoError(t, err)
	return f
}

func (f *fixture) record(e events.Event) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.received = append(f.received, e)
}

func (f *fixture) events() []events.Event {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]events.Event(nil), f.received...)
}

func TestAServiceThatIsNotDeclaredIsNotFound(t *testing.T) {
	f := newFixture(t)
	_, err := f.c.Stop(context.Background(), events.NewKey(v1alpha1.KindMCPServer, "", "nope"), "")
	assert.ErrorIs(t, err, ErrNotFound)
	assert.Empty(t, f.ov.List(), "nothing recorded")
}

func TestARequestForADisabledKindIsRefused(t *testing.T) {
	f := newFixture(t)
	f.index.SetFile("mcpservers/git.yaml", []resources.Doc{{Key: events.NewKey(v1alpha1.KindMCPServer, "", "git"), Object: &v1alpha1.MCPServer{}, Hash: "h"}}, nil, events.Key{})
	require.NoError(t, f.c.SetKindEnabled(v1alpha1.KindMCPServer, false))
	_, err := f.c.Stop(context.Background(), events.NewKey(v1alpha1.KindMCPServer, "", "git"), "")
	assert.ErrorIs(t, err, ErrRefused)
	assert.Empty(t, f.ov.List(), "a stop nobody would carry out is not recorded")
}

func TestResyncTriggersListedKeysOfEnabledKindsWithOneCorrelation(t *testing.T) {
	f := newFixture(t)
	f.index.SetFile("workflows/a.yaml", []resources.Doc{{Key: events.NewKey(v1alpha1.KindWorkflow, "", "a"), Object: &v1alpha1.Workflow{}, Hash: "h"}}, nil, events.Key{})
	require.NoError(t, f.c.SetKindEnabled(v1alpha1.KindMCPServer, false))
	res, err := f.c.Resync(context.Background(), "")
	require.NoError(t, err)
	assert.Equal(t, []string{v1alpha1.KindWorkflow}, res.Kinds)
	assert.Equal(t, []string{v1alpha1.KindMCPServer}, res.Skipped)
	assert.Equal(t, 2, res.Keys, "the declared key and the orphan the reconciler lists")
	_, err = f.c.Resync(context.Background(), "Gadget")
	assert.ErrorIs(t, err, ErrNotFound)

	require.Eventually(t, func() bool { return len(f.events()) >= 3 }, 10*time.Second, time.Millisecond)
	var trig events.ReconciliationTriggered
	for _, e := range f.events() {
		if tr, ok := e.(events.ReconciliationTriggered); ok {
			trig = tr
		}
	}
	assert.Equal(t, events.ReasonResync, trig.Reason)
	assert.Equal(t, res.CorrelationID, trig.CorrelationID)
	assert.ElementsMatch(t, []events.Key{events.NewKey(v1alpha1.KindWorkflow, "", "a"), events.NewKey(v1alpha1.KindWorkflow, "", "orphan")}, trig.Keys.Keys())
	o := f.c.Overview()
	require.NotNil(t, o.LastFullResync)
	assert.Equal(t, []string{v1alpha1.KindWorkflow}, o.EnabledKinds)
	assert.Equal(t, NoteDisabled, o.Kinds[0].Note)
	assert.Equal(t, map[string]int{"Pending": 1}, o.Resources)
}

func TestToggleIsAnEventOnlyWhenItChangesSomething(t *testing.T) {
	f := newFixture(t)
	require.NoError(t, f.c.SetKindEnabled(v1alpha1.KindWorkflow, true)) // enabled already
	require.NoError(t, f.c.SetKindEnabled(v1alpha1.KindWorkflow, false))
	require.NoError(t, f.c.SetKindEnabled(v1alpha1.KindWorkflow, false))
	assert.Equal(t, map[string]bool{v1alpha1.KindWorkflow: true}, f.statuses.disabled, "the statuses are told")
	require.Eventually(t, func() bool { return len(f.events()) >= 1 }, 10*time.Second, time.Millisecond)
	err := f.c.SetKindEnabled("Gadget", false)
	assert.True(t, errors.Is(err, ErrNotFound))
	// A further toggle, as a barrier: the events come in order.
	require.NoError(t, f.c.SetKindEnabled(v1alpha1.KindWorkflow, true))
	require.Eventually(t, func() bool { return len(f.events()) >= 2 }, 10*time.Second, time.Millisecond)
	got := f.events()
	require.Len(t, got, 2)
	assert.Equal(t, map[string]bool{v1alpha1.KindWorkflow: false}, f.statuses.disabled)
	assert.Equal(t, ReconciliationToggled{Meta: got[0].Metadata(), Kind: v1alpha1.KindWorkflow, Enabled: false}, got[0])
	assert.Equal(t, ReconciliationToggled{Meta: got[1].Metadata(), Kind: v1alpha1.KindWorkflow, Enabled: true}, got[1])
}

// A start of a server that is not running is a fresh start, not held back
// by a backoff; a restart of a stopped server is refused.
func TestStartIsAFreshStartAndRestartOfAStoppedServerIsRefused(t *testing.T) {
	f := newFixture(t)
	key := events.NewKey(v1alpha1.KindMCPServer, "", "git")
	f.index.SetFile("mcpservers/git.yaml", []resources.Doc{{Key: key, Object: &v1alpha1.MCPServer{Spec: v1alpha1.MCPServerSpec{AutoStart: true}}, Hash: "h"}}, nil, events.Key{})
	res, err := f.c.Start(context.Background(), key, "")
	require.NoError(t, err)
	assert.False(t, res.Reconciled, "no coordinator here: the request is recorded, the wait times out")
	assert.Equal(t, res.CorrelationID, f.ov.Override(key, "h").Restart)

	res, err = f.c.Stop(context.Background(), key, "maintenance")
	require.NoError(t, err)
	r, ok := f.ov.Get(key)
	require.True(t, ok)
	assert.Equal(t, services.Record{Key: key, State: services.StateStopped, Reason: "maintenance", Hash: "h", Since: r.Since, CorrelationID: res.CorrelationID}, r)
	_, err = f.c.Restart(context.Background(), key, "")
	assert.ErrorIs(t, err, ErrRefused)
	res, err = f.c.Stop(context.Background(), key, "")
	require.NoError(t, err)
	assert.True(t, res.Unchanged, "stopped already")
}
