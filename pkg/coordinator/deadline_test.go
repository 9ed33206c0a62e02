package coordinator

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var errTestCause = errors.New("test cause")

type ctxKey struct{}

// isDone reports whether ctx's Done is closed, without waiting.
func isDone(ctx context.Context) bool {
	select {
	case <-ctx.Done():
		return true
	default:
		return false
	}
}

// A reconcile's context answers as context.WithDeadlineCause's, whenever
// it is first asked: its deadline, its end at the deadline with the
// cause, the parent's end, the reconcile's return, values and children.
func TestAReconcileContextAnswersAsAContextWithADeadline(t *testing.T) {
	t.Run("the deadline, without building anything", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			d := time.Now().Add(time.Minute)
			c := newReconcileContext(context.Background(), d, errTestCause)
			got, ok := c.Deadline()
			assert.True(t, ok)
			assert.Equal(t, d, got)
			assert.Nil(t, c.built.Load(), "a deadline needs no timer")

			parent, cancel := context.WithDeadline(context.Background(), d.Add(-time.Second))
			defer cancel()
			got, _ = newReconcileContext(parent, d, errTestCause).Deadline()
			assert.Equal(t, d.Add(-time.Second), got, "the parent's, when earlier")
			c.end()
		})
	})
	t.Run("ends at the deadline with its cause", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			c := newReconcileContext(context.Background(), time.Now().Add(time.Minute), errTestCause)
			defer c.end()
			child, cancelChild := context.WithCancel(c) // built by the child's link
			defer cancelChild()
			require.NotNil(t, c.built.Load())
			time.Sleep(time.Minute - time.Nanosecond)
			synctest.Wait()
			assert.False(t, isDone(c))
			assert.NoError(t, c.Err())
			time.Sleep(time.Nanosecond)
			synctest.Wait()
			assert.True(t, isDone(c))
			assert.ErrorIs(t, c.Err(), context.DeadlineExceeded)
			assert.Equal(t, errTestCause, context.Cause(c))
			assert.True(t, isDone(child), "a child ends with it")
			assert.Equal(t, errTestCause, context.Cause(child))
		})
	})
	t.Run("a deadline passed before it was first asked", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			c := newReconcileContext(context.Background(), time.Now().Add(time.Minute), errTestCause)
			defer c.end()
			time.Sleep(time.Hour)
			assert.ErrorIs(t, c.Err(), context.DeadlineExceeded)
			assert.Equal(t, errTestCause, context.Cause(c))
		})
	})
	t.Run("ends with the parent, with the parent's cause", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			parent, cancel := context.WithCancelCause(context.WithValue(context.Background(), ctxKey{}, "v"))
			c := newReconcileContext(parent, time.Now().Add(time.Minute), errTestCause)
			defer c.end()
			assert.Equal(t, "v", c.Value(ctxKey{}), "the parent's values")
			assert.False(t, isDone(c))
			cancel(errors.New("stopping"))
			synctest.Wait()
			assert.True(t, isDone(c))
			assert.ErrorIs(t, c.Err(), context.Canceled)
			assert.EqualError(t, context.Cause(c), "stopping")
		})
	})
	t.Run("ends when the reconcile returns, asked before or after", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			before := newReconcileContext(context.Background(), time.Now().Add(time.Minute), errTestCause)
			done := before.Done()
			before.end()
			synctest.Wait()
			assert.True(t, isDone(before))
			select {
			case <-done:
			default:
				t.Fatal("the channel handed out before the end is closed")
			}
			assert.ErrorIs(t, before.Err(), context.Canceled)

			after := newReconcileContext(context.Background(), time.Now().Add(time.Minute), errTestCause)
			after.end()
			assert.Nil(t, after.built.Load(), "nothing was built for a context nobody asked")
			assert.True(t, isDone(after))
			assert.ErrorIs(t, after.Err(), context.Canceled)
			assert.Equal(t, context.Canceled, context.Cause(after))
		})
	})
}
