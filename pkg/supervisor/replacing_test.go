package supervisor_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/musterd/musterd/pkg/apis/muster/v1alpha1"
	"github.com/musterd/musterd/pkg/supervisor"
)

// stateMark is one observation's state and Replacing mark.
type stateMark struct {
	State     v1alpha1.MCPServerState
	Replacing bool
}

// The observations in between a spec-change replacement carry Replacing,
// so that the catalogue keeps the tools offered while calls wait for the
// new instance; the new instance's Running or Failed, a first start and a
// stop never do.
func TestAReplacementMarksTheObservationsInBetween(t *testing.T) {
	t.Parallel()
	h := newHarness(t, supervisor.Options{})
	k := key("replacing")
	marks := func() []stateMark {
		var out []stateMark
		for _, o := range h.rec.of(k) {
			out = append(out, stateMark{o.State, o.Replacing})
		}
		return out
	}
	const (
		starting = v1alpha1.MCPServerStateStarting
		stopped  = v1alpha1.MCPServerStateStopped
		failed   = v1alpha1.MCPServerStateFailed
	)

	h.ensure(t, k, fake("-tools", "echo"))
	obs := h.ensure(t, k, fake("-tools", "echo,sum"))
	assert.False(t, obs.Replacing, "Ensure's answer never carries it")
	// A first start: Starting when asked for and when it begins, unmarked.
	want := []stateMark{{starting, false}, {starting, false}, {running, false}, {stopped, true}, {starting, true}, {running, false}}
	require.Eventually(t, func() bool { return len(marks()) >= len(want) }, deadline, 5*time.Millisecond)
	assert.Equal(t, want, marks())

	// A replacement whose new instance fails: Failed is not marked.
	assert.Equal(t, failed, h.ensure(t, k, fake("-exit-at-once")).State)
	want = append(want, stateMark{stopped, true}, stateMark{starting, true}, stateMark{failed, false})
	require.Eventually(t, func() bool { return len(marks()) >= len(want) }, deadline, 5*time.Millisecond)
	assert.Equal(t, want, marks())

	require.NoError(t, h.sup.Stop(t.Context(), k))
	want = append(want, stateMark{stopped, false})
	require.Eventually(t, func() bool { return len(marks()) >= len(want) }, deadline, 5*time.Millisecond)
	assert.Equal(t, want, marks())
}
