package events

// recordsPage is how many records a page of [Records] holds.
const recordsPage = 256

// Records is a stage's table of per-key records, indexed by the handles of
// its [Interner], kept in fixed-size pages. Growing it allocates a page and
// never moves a record: a slice grown a handle at a time would copy every
// record about four times over as it grew (Go grows large slices by a
// quarter), a large share of a burst's CPU, and hold the old and the new
// array at once at the peak. Pointers it returns stay
// valid until Reset. The zero value is empty and ready to use; it is not
// safe for concurrent use.
type Records[T any] struct {
	pages []*[recordsPage]T
}

// At returns h's record, growing the table to hold it: a record never set
// is T's zero value.
func (r *Records[T]) At(h Handle) *T {
	p := int(h) / recordsPage
	for p >= len(r.pages) {
		r.pages = append(r.pages, new([recordsPage]T))
	}
	return &r.pages[p][int(h)%recordsPage]
}

// Reset drops every page, letting a burst's memory go.
func (r *Records[T]) Reset() { r.pages = nil }
