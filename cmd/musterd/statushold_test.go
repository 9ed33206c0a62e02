package main

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
)

func released(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

func TestStatusWritesAreHeldUntilReadyOrTheBound(t *testing.T) {
	t.Run("ready first", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			ready, release := make(chan struct{}), make(chan struct{})
			go holdStatusWrites(ready, statusWritesHold, release)
			time.Sleep(statusWritesHold / 2)
			synctest.Wait()
			assert.False(t, released(release), "held while not ready")
			close(ready)
			synctest.Wait()
			assert.True(t, released(release), "released at readiness")
		})
	})
	t.Run("the bound first", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			ready, release := make(chan struct{}), make(chan struct{})
			go holdStatusWrites(ready, statusWritesHold, release)
			time.Sleep(statusWritesHold - time.Nanosecond)
			synctest.Wait()
			assert.False(t, released(release))
			time.Sleep(time.Nanosecond)
			synctest.Wait()
			assert.True(t, released(release), "released at the bound, never ready")
		})
	})
}
