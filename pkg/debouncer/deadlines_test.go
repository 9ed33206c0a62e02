package debouncer

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/musterd/musterd/pkg/events"
)

func TestDeadlineQueueKeepsOrderAcrossWrapAndAClockSteppedBack(t *testing.T) {
	var q deadlineQueue
	t0 := time.Unix(1000, 0)
	at := func(i int) time.Time { return t0.Add(time.Duration(i) * time.Second) }
	// Fill past the first allocation with the front moving, so that the
	// ring wraps around.
	seq := uint64(0)
	for i := range 50 {
		seq++
		q.push(deadline{at: at(i), seq: seq, h: events.Handle(i)})
	}
	for range 40 {
		q.pop()
	}
	for i := 50; i < 100; i++ {
		seq++
		q.push(deadline{at: at(i), seq: seq, h: events.Handle(i)})
	}
	// A clock stepped back: the entry is sorted into place, behind the
	// entries of its own instant.
	seq++
	q.push(deadline{at: at(55), seq: seq, h: 999})

	var got []events.Handle
	for q.len() > 0 {
		got = append(got, q.front().h)
		q.pop()
	}
	var want []events.Handle
	for i := 40; i < 100; i++ {
		want = append(want, events.Handle(i))
		if i == 55 {
			want = append(want, 999)
		}
	}
	assert.Equal(t, want, got)
}

func TestDeadlineQueueCompactKeepsTheLiveInOrder(t *testing.T) {
	var q deadlineQueue
	t0 := time.Unix(1000, 0)
	for i := range 100 {
		q.push(deadline{at: t0.Add(time.Duration(i)), seq: uint64(i), h: events.Handle(i % 10)})
	}
	q.compact(func(d deadline) bool { return d.seq >= 90 }) // each handle's newest
	require.Equal(t, 10, q.len())
	for i := range 10 {
		assert.Equal(t, uint64(90+i), q.front().seq)
		q.pop()
	}
}
