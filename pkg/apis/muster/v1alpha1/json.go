package v1alpha1

import "bytes"

// JSON holds any JSON value (string, number, boolean, null, object or array)
// as its encoding, for fields whose schema preserves unknown fields: step
// arguments, argument defaults, expected values and output templates.
//
// +kubebuilder:validation:Type=""
// +kubebuilder:pruning:PreserveUnknownFields
type JSON struct {
	// Raw is the value's JSON encoding; empty means null.
	Raw []byte `json:"-"`
}

// MarshalJSON returns the held encoding, or null when empty.
func (j JSON) MarshalJSON() ([]byte, error) {
	if len(j.Raw) == 0 {
		return []byte("null"), nil
	}
	return j.Raw, nil
}

// UnmarshalJSON keeps a copy of data; null is held as empty.
func (j *JSON) UnmarshalJSON(data []byte) error {
	if bytes.Equal(data, []byte("null")) {
		j.Raw = nil
		return nil
	}
	j.Raw = append(j.Raw[:0:0], data...)
	return nil
}
