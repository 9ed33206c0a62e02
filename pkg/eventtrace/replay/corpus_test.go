package replay_test

import (
	"path/filepath"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/musterd/musterd/pkg/eventtrace"
	"github.com/musterd/musterd/pkg/eventtrace/replay"
	"github.com/musterd/musterd/pkg/eventtrace/replay/replaytest"
)

// corpus is testdata/traces: traces recorded from real runs of musterd by
// internal/tracegen.
const corpus = "../../../testdata/traces"

// TestCorpus replays each recorded trace through the pipeline (debouncer,
// coordinator replaying the recorded outcomes, status store), compares
// the output with its golden file, and checks the replay's promise: the
// replay yields the recorded sequence of Synced and Failed outcomes per
// resource.
func TestCorpus(t *testing.T) {
	for _, name := range []string{"burst-10k", "create-1000", "delete-recreate", "malformed-fix", "crash-loop", "resync"} {
		t.Run(name, func(t *testing.T) {
			recorded, err := eventtrace.ReadFile(filepath.Join(corpus, name+".trace"))
			require.NoError(t, err)
			synctest.Test(t, func(t *testing.T) {
				got, err := replay.Replay(recorded, pipeline)
				require.NoError(t, err)
				assert.Equal(t, outcomes(recorded), outcomes(got), "the recorded outcomes per resource")
				replaytest.Golden(t, got, filepath.Join(corpus, name+".golden"))
			})
		})
	}
}

// TestCorpusSteppedEqualsTheGoldens replays each recorded trace outside
// synctest, on the fake clock ReplayStepped steps, and checks that the
// output is byte for byte the golden file the bubble's replay wrote.
func TestCorpusSteppedEqualsTheGoldens(t *testing.T) {
	for _, name := range []string{"burst-10k", "create-1000", "delete-recreate", "malformed-fix", "crash-loop", "resync"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			recorded, err := eventtrace.ReadFile(filepath.Join(corpus, name+".trace"))
			require.NoError(t, err)
			got, err := replay.ReplayStepped(recorded, pipeline)
			require.NoError(t, err)
			replaytest.Golden(t, got, filepath.Join(corpus, name+".golden"))
		})
	}
}
