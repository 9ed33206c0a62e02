package turns

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// One holder per key at a time; another key's turn is free meanwhile; a
// wait ends with its context; a key no one holds or awaits is forgotten.
func TestOneHolderPerKey(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var k Keyed[string]
		giveA, err := k.Take(t.Context(), "a")
		require.NoError(t, err)
		giveB, err := k.Take(t.Context(), "b")
		require.NoError(t, err, "another key's turn is free")

		got := make(chan struct{})
		go func() {
			give, err := k.Take(t.Context(), "a")
			if err == nil {
				close(got)
				give()
			}
		}()
		synctest.Wait()
		select {
		case <-got:
			t.Fatal("a second holder of a's turn")
		default:
		}

		stop := errors.New("gave up")
		ctx, cancel := context.WithCancelCause(t.Context())
		waited := make(chan error, 1)
		go func() { _, err := k.Take(ctx, "a"); waited <- err }()
		synctest.Wait()
		cancel(stop)
		assert.ErrorIs(t, <-waited, stop, "a wait ends with its context, saying why")

		giveA()
		<-got
		giveB()
		synctest.Wait()
		assert.Zero(t, k.Len(), "no turn held or awaited: nothing kept")
	})
}
