package supervised

import (
	"context"
	"errors"
	"time"

	"github.com/musterd/musterd/pkg/supervisor"
)

// StopperName is the Stopper's component name.
const StopperName = "supervisor"

// DefaultShutdownTimeout is StopperOptions.Timeout's default: above the
// supervisor's own SIGTERM grace, so that its SIGKILL of a server that
// ignores SIGTERM is the normal path, not a timeout.
const DefaultShutdownTimeout = supervisor.DefaultStopGrace + 5*time.Second

// StopperOptions configure a Stopper. The zero value of each field is its
// default.
type StopperOptions struct {
	// Timeout bounds the shutdown: servers still running then are killed
	// (SIGKILL to their process groups), and the Stopper still waits until
	// they are reaped. Keep it below the lifecycle's StopTimeout, so that
	// the kill comes before the registry gives up waiting, and above the
	// supervisor's StopGrace. Default DefaultShutdownTimeout (10s).
	Timeout time.Duration
}

// Stopper is the supervisor's lifecycle component: Start waits for its
// context to end, then stops every server the supervisor runs.
type Stopper struct {
	sup     *supervisor.Supervisor
	timeout time.Duration
}

// NewStopper returns the lifecycle component of sup.
func NewStopper(sup *supervisor.Supervisor, opts StopperOptions) *Stopper {
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultShutdownTimeout
	}
	return &Stopper{sup: sup, timeout: opts.Timeout}
}

// Name returns "supervisor".
func (s *Stopper) Name() string { return StopperName }

// Start blocks until ctx is done, then shuts the supervisor down: every
// server is stopped and every process reaped before it returns. Its error
// says if some had to be killed.
func (s *Stopper) Start(ctx context.Context) error {
	<-ctx.Done()
	shutdownCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.timeout)
	defer cancel()
	if err := s.sup.Shutdown(shutdownCtx); err != nil {
		return errors.Join(errors.New("supervisor: shutdown"), err)
	}
	return nil
}
