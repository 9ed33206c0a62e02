package config

import (
	"encoding/json"
	"fmt"
	"log/slog"
)

// Redacted is what a set Secret shows wherever it is printed or encoded.
const Redacted = "<redacted>"

// Secret holds a credential from the configuration. It shows Redacted
// through every printer and encoder (fmt's verbs, %#v included, JSON, YAML,
// encoding.TextMarshaler, slog), and "" when unset, so that a view of the
// configuration tells whether a secret is set without telling it. Only
// Reveal returns the value, for the one place that must use it.
//
// The value sits behind a pointer: fmt prints a pointer it reaches inside
// a struct as an address, so even a Config reached through an unexported
// field (which fmt prints without calling methods) does not show it.
// Compare Secrets with Reveal or reflect.DeepEqual, not ==.
type Secret struct {
	value *string
}

// NewSecret holds value as a Secret; "" is unset.
func NewSecret(value string) Secret {
	if value == "" {
		return Secret{}
	}
	return Secret{value: &value}
}

// Reveal returns the secret itself. Call it only where the secret is used
// (a request to the provider, a store's key), never to show it.
func (s Secret) Reveal() string {
	if s.value == nil {
		return ""
	}
	return *s.value
}

// IsSet reports whether the secret holds a value.
func (s Secret) IsSet() bool { return s.value != nil }

func (s Secret) shown() string {
	if s.value == nil {
		return ""
	}
	return Redacted
}

// String shows Redacted, or "" when unset.
func (s Secret) String() string { return s.shown() }

// GoString is String for %#v.
func (s Secret) GoString() string { return s.shown() }

// Format makes every verb show String: without it, a verb that takes no
// Stringer (%d, %x on a struct's fields) would print the value.
func (s Secret) Format(f fmt.State, verb rune) {
	if verb == 'q' {
		fmt.Fprintf(f, "%q", s.shown())
		return
	}
	fmt.Fprint(f, s.shown())
}

// MarshalJSON encodes String as a JSON string.
func (s Secret) MarshalJSON() ([]byte, error) { return json.Marshal(s.shown()) }

// MarshalText is String, for encoders that take text.
func (s Secret) MarshalText() ([]byte, error) { return []byte(s.shown()), nil }

// MarshalYAML encodes String.
func (s Secret) MarshalYAML() (any, error) { return s.shown(), nil }

// LogValue is String, for slog.
func (s Secret) LogValue() slog.Value { return slog.StringValue(s.shown()) }
