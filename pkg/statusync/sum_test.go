package statusync

import (
	"hash/maphash"
	"reflect"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/musterd/musterd/pkg/events"
)

// The store skips a write whose Status.sum equals the last written one's, so
// every field must change the sum, and equal instants must not.
func TestStatusSumTellsEveryFieldApart(t *testing.T) {
	seed := maphash.MakeSeed()
	at := time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC)
	base := Status{Key: events.NewKey("Workflow", "default", "w"), State: StateError, LastReconcileTime: at,
		LastError: "boom", RetryCount: 2, NextRetry: at.Add(time.Second), CorrelationID: "c1"}
	sum := base.sum(seed)
	require.Equal(t, 9, reflect.TypeFor[Status]().NumField(), "a new Status field needs a case below, and a place in sum")

	same := base
	same.LastReconcileTime = at.In(time.FixedZone("X", 3600)) // the same instant
	assert.Equal(t, sum, same.sum(seed), "an equal instant in another zone")

	for name, change := range map[string]func(*Status){
		"kind":              func(s *Status) { s.Key.Kind = "MCPServer" },
		"namespace":         func(s *Status) { s.Key.Namespace = "other" },
		"name":              func(s *Status) { s.Key.Name = "v" },
		"field boundary":    func(s *Status) { s.Key.Namespace, s.Key.Name = "defaultw", "" },
		"state":             func(s *Status) { s.State = StateFailed },
		"lastReconcileTime": func(s *Status) { s.LastReconcileTime = at.Add(time.Nanosecond) },
		"zero time":         func(s *Status) { s.NextRetry = time.Time{} },
		"lastError":         func(s *Status) { s.LastError = "bang" },
		"retryCount":        func(s *Status) { s.RetryCount = 3 },
		"nextRetry":         func(s *Status) { s.NextRetry = at },
		"correlationID":     func(s *Status) { s.CorrelationID = "c2" },
		"observedHash":      func(s *Status) { s.ObservedHash = "h2" },
		"reconcileDisabled": func(s *Status) { s.ReconcileDisabled = true },
	} {
		changed := base
		change(&changed)
		assert.NotEqual(t, sum, changed.sum(seed), name)
	}
}
