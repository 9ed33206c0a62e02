package statusync_test

import (
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/musterd/musterd/pkg/events"
	"github.com/musterd/musterd/pkg/statusync"
)

// A kind disabled at start, or later, shows in its resources' statuses,
// each written again when the switch changes it; other kinds are not
// touched.
func TestAKindsDisabledReconciliationIsInItsStatuses(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := &fakeWriter{}
		wfKey := events.NewKey("Workflow", "", "deploy")
		h := startStore(t, statusync.StoreOptions{Writer: w})
		defer h.stop(t)
		h.store.SetKindDisabled("Workflow", true) // before any event, as the daemon does before Start
		h.publish(events.ResourceSynced{Meta: meta("c1"), Key: gitKey, Attempt: 1})
		h.publish(events.ResourceChanged{Meta: meta("c2"), Key: wfKey})
		require.Len(t, w.Calls(), 2)
		assert.False(t, w.Calls()[0].Status.ReconcileDisabled)
		assert.True(t, w.Calls()[1].Status.ReconcileDisabled, "disabled before its first event")

		h.store.SetKindDisabled("MCPServer", true)
		synctest.Wait()
		require.Len(t, w.Calls(), 3)
		assert.Equal(t, gitKey, w.Calls()[2].Status.Key)
		assert.True(t, w.Calls()[2].Status.ReconcileDisabled)
		st, _ := h.store.Get(gitKey)
		assert.True(t, st.ReconcileDisabled)
		assert.Equal(t, statusync.StateSynced, st.State, "the last reconcile's state stays")

		h.store.SetKindDisabled("MCPServer", true) // no change, no write
		h.store.SetKindDisabled("Workflow", false)
		synctest.Wait()
		require.Len(t, w.Calls(), 4)
		assert.Equal(t, wfKey, w.Calls()[3].Status.Key)
		assert.False(t, w.Calls()[3].Status.ReconcileDisabled)
	})
}
