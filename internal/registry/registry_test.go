package registry

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// Funcs come out in registration order; a cancel removes its own only,
// twice is harmless, and a func may cancel itself while the snapshot is
// being called.
func TestFuncsInRegistrationOrderAndCancel(t *testing.T) {
	var r Funcs[func() string]
	assert.Empty(t, r.All())
	r.Add(func() string { return "a" })
	cancelB := r.Add(func() string { return "b" })
	var cancelC func()
	cancelC = r.Add(func() string { cancelC(); return "c" })
	r.Add(func() string { return "d" })

	var got []string
	for _, fn := range r.All() {
		got = append(got, fn())
	}
	assert.Equal(t, []string{"a", "b", "c", "d"}, got, "c ran though it cancelled itself during the call")
	cancelB()
	cancelB()
	got = nil
	for _, fn := range r.All() {
		got = append(got, fn())
	}
	assert.Equal(t, []string{"a", "d"}, got)
}
