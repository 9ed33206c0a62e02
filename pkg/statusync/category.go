package statusync

import (
	"context"
	"errors"
)

// Categories of StatusSyncFailed that the store itself assigns. Writers add
// their own with WithCategory, such as "conflict_after_retries" or
// "api_server_unreachable".
const (
	// CategoryOther is an error that carries no category.
	CategoryOther = "other"
	// CategoryTimeout is a write that outlived StoreOptions.WriteTimeout.
	CategoryTimeout = "timeout"
)

// ErrSkipped is what a StatusWriter returns, possibly wrapped, when it
// chose not to write: the status is not this replica's to write (a
// follower in Kubernetes mode). The store then publishes StatusSynced with
// category skipped, not written, and does not take the status as written,
// so the same status is still written once the writer writes again.
var ErrSkipped = errors.New("status not written: not this replica's to write")

// CategorizedError is an error with a StatusSyncFailed category. The store
// finds it anywhere in an error's chain.
type CategorizedError struct {
	Category string
	Err      error
}

func (e *CategorizedError) Error() string { return e.Err.Error() }
func (e *CategorizedError) Unwrap() error { return e.Err }

// StatusCategory returns the category.
func (e *CategorizedError) StatusCategory() string { return e.Category }

// WithCategory wraps err with a category for metrics and logs. It returns
// nil for nil.
func WithCategory(category string, err error) error {
	if err == nil {
		return nil
	}
	return &CategorizedError{Category: category, Err: err}
}

// CategoryOf returns the category of the first error in err's chain that
// has one (implements StatusCategory() string); else CategoryTimeout for a
// deadline, else CategoryOther.
func CategoryOf(err error) string {
	var c interface{ StatusCategory() string }
	switch {
	case errors.As(err, &c) && c.StatusCategory() != "":
		return c.StatusCategory()
	case errors.Is(err, context.DeadlineExceeded):
		return CategoryTimeout
	}
	return CategoryOther
}
