package bus_test

import (
	"testing"

	evbus "github.com/asaskevich/EventBus"
	"github.com/stretchr/testify/assert"

	"github.com/musterd/musterd/pkg/events"
)

// These tests pin that the defects the wrapper designs out are real in the
// EventBus version go.mod selects. If one starts failing, EventBus fixed
// the defect; the wrapper's guard may then be simplified. (The deadlock of
// a publishing handler is not witnessed here: it would leave a goroutine
// hung forever.)

func TestRawEventBusUnsubscribeConfusesClosuresOfOneLiteral(t *testing.T) {
	eb := evbus.New()
	var got [2]int
	var handlers []func()
	for i := range 2 { // one literal, so one code pointer for both closures
		handlers = append(handlers, func() { got[i]++ })
	}
	assert.NoError(t, eb.Subscribe("t", handlers[0]))
	assert.NoError(t, eb.Subscribe("t", handlers[1]))

	assert.NoError(t, eb.Unsubscribe("t", handlers[1])) // asks to remove the second…
	eb.Publish("t")
	assert.Equal(t, [2]int{0, 1}, got, "…but EventBus removed the first")
}

func TestRawEventBusSubscribeOnceRemovesByStaleIndex(t *testing.T) {
	eb := evbus.New()
	var a, b, c int
	assert.NoError(t, eb.SubscribeOnce("t", func() { a++ }))
	assert.NoError(t, eb.Subscribe("t", func() { b++ }))
	assert.NoError(t, eb.SubscribeOnce("t", func() { c++ }))
	eb.Publish("t")
	eb.Publish("t")
	assert.Equal(t, 1, a)
	assert.Equal(t, 2, b)
	assert.Equal(t, 2, c, "EventBus ran a once-handler twice")
}

func TestRawEventBusPanicsOnAnArgumentOfTheWrongType(t *testing.T) {
	eb := evbus.New()
	assert.NoError(t, eb.Subscribe(events.TypeResourceChanged, func(events.ResourceChanged) {}))
	assert.Panics(t, func() { eb.Publish(events.TypeResourceChanged, impostor{}) })
}
