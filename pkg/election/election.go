package election

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/util/uuid"
	coordinationv1 "k8s.io/client-go/kubernetes/typed/coordination/v1"
	corev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"

	"github.com/musterd/musterd/pkg/bus"
	"github.com/musterd/musterd/pkg/events"
)

// controller-runtime's manager defaults.
const (
	DefaultLeaseDuration = 15 * time.Second
	DefaultRenewDeadline = 10 * time.Second
	DefaultRetryPeriod   = 2 * time.Second
)

// Name is the component's name.
const Name = "leader-election"

// ErrLostLeadership is Start's error when this replica lost the Lease.
var ErrLostLeadership = errors.New("leader election: lost the lease")

// Options configures an Elector.
type Options struct {
	// Config reaches the API server. Required.
	Config *rest.Config
	// Namespace and ID name the Lease. Both required.
	Namespace string
	ID        string
	// Identity names this replica in the Lease. Default: the hostname and
	// a UUID, as controller-runtime makes it.
	Identity string
	// LeaseDuration, RenewDeadline and RetryPeriod are client-go's; the
	// defaults are controller-runtime's (DefaultLeaseDuration …).
	LeaseDuration time.Duration
	RenewDeadline time.Duration
	RetryPeriod   time.Duration
	// Ready, if set, holds the campaign until it is closed.
	Ready <-chan struct{}
	// OnElected runs once this replica leads, after Elected is closed and
	// before BecameLeader is published. Optional.
	OnElected func()
	// OnLost runs when this replica loses the Lease, after LostLeadership
	// is published. Optional.
	OnLost func(error)
	// Logger defaults to slog.Default().
	Logger *slog.Logger
}

// Elector campaigns for the Lease and tells who leads. Make it with New;
// it is a lifecycle component.
type Elector struct {
	bus     *bus.Bus
	opts    Options
	log     *slog.Logger
	lock    resourcelock.Interface
	elected chan struct{}
	leading atomic.Bool
	// leader is the identity of the Lease's holder as last observed, ""
	// while none is known.
	leader  atomic.Pointer[string]
	started atomic.Bool
}

// New returns an elector publishing on b. It contacts the API server only
// in Start.
func New(b *bus.Bus, opts Options) (*Elector, error) {
	switch {
	case b == nil:
		return nil, errors.New("leader election: nil bus")
	case opts.Config == nil:
		return nil, errors.New("leader election: Options.Config is required")
	case opts.Namespace == "":
		return nil, errors.New("leader election: the Lease's namespace is required")
	case opts.ID == "":
		return nil, errors.New("leader election: the Lease's name (ID) is required")
	}
	if opts.LeaseDuration <= 0 {
		opts.LeaseDuration = DefaultLeaseDuration
	}
	if opts.RenewDeadline <= 0 {
		opts.RenewDeadline = DefaultRenewDeadline
	}
	if opts.RetryPeriod <= 0 {
		opts.RetryPeriod = DefaultRetryPeriod
	}
	if opts.LeaseDuration <= opts.RenewDeadline || opts.RenewDeadline <= opts.RetryPeriod {
		return nil, fmt.Errorf("leader election: want lease duration (%s) > renew deadline (%s) > retry period (%s)",
			opts.LeaseDuration, opts.RenewDeadline, opts.RetryPeriod)
	}
	if opts.Identity == "" {
		host, err := os.Hostname()
		if err != nil {
			return nil, fmt.Errorf("leader election: identity: %w", err)
		}
		opts.Identity = host + "_" + string(uuid.NewUUID())
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	// As controller-runtime does: a hung request must not outlast the
	// renew deadline.
	cfg := rest.AddUserAgent(rest.CopyConfig(opts.Config), "leader-election")
	cfg.Timeout = max(opts.RenewDeadline/2, time.Second)
	core, err := corev1.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("leader election: %w", err)
	}
	coord, err := coordinationv1.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("leader election: %w", err)
	}
	lock, err := resourcelock.New(resourcelock.LeasesResourceLock, opts.Namespace, opts.ID, core, coord,
		resourcelock.ResourceLockConfig{Identity: opts.Identity})
	if err != nil {
		return nil, fmt.Errorf("leader election: %w", err)
	}
	return &Elector{
		bus:     b,
		opts:    opts,
		log:     opts.Logger.With("component", Name, "lease", opts.Namespace+"/"+opts.ID, "identity", opts.Identity),
		lock:    lock,
		elected: make(chan struct{}),
	}, nil
}

// Name identifies the component.
func (e *Elector) Name() string { return Name }

// Elected is closed once this replica leads.
func (e *Elector) Elected() <-chan struct{} { return e.elected }

// Identity is this replica's name in the Lease.
func (e *Elector) Identity() string { return e.opts.Identity }

// Leader reports whether this replica leads and, when it does not, the
// identity of the replica that holds the Lease as last observed ("" while
// none is known, such as before this replica's first attempt).
func (e *Elector) Leader() (identity string, leading bool) {
	if e.leading.Load() {
		return e.opts.Identity, true
	}
	if p := e.leader.Load(); p != nil && *p != e.opts.Identity {
		return *p, false
	}
	return "", false
}

// Start campaigns once Options.Ready is closed and holds the Lease while
// it can. It returns nil when ctx is done (releasing the Lease), and
// ErrLostLeadership when the Lease was lost.
func (e *Elector) Start(ctx context.Context) error {
	if !e.started.CompareAndSwap(false, true) {
		return errors.New("leader election: already started")
	}
	if e.opts.Ready != nil {
		select {
		case <-e.opts.Ready:
		case <-ctx.Done():
			return nil
		}
	}
	le, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock:            e.lock,
		LeaseDuration:   e.opts.LeaseDuration,
		RenewDeadline:   e.opts.RenewDeadline,
		RetryPeriod:     e.opts.RetryPeriod,
		ReleaseOnCancel: true,
		Name:            e.opts.ID,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(context.Context) { e.becameLeader() },
			OnStoppedLeading: func() {},
			OnNewLeader: func(identity string) {
				e.leader.Store(&identity)
				if identity != e.opts.Identity {
					e.log.Info("another replica leads", "leader", identity)
				}
			},
		},
	})
	if err != nil {
		return fmt.Errorf("leader election: %w", err)
	}
	e.log.Info("campaigning for the lease", "leaseDuration", e.opts.LeaseDuration,
		"renewDeadline", e.opts.RenewDeadline, "retryPeriod", e.opts.RetryPeriod)
	le.Run(ctx)
	if ctx.Err() != nil {
		if e.leading.Load() {
			e.log.Info("stopped; lease released")
		}
		return nil
	}
	// Run returns before ctx is done only after leading.
	e.log.Error("lost the lease; the leader-only stages must stop")
	bus.Publish(e.bus, events.LostLeadership{Meta: events.NewMeta(""), Identity: e.opts.Identity})
	if e.opts.OnLost != nil {
		e.opts.OnLost(ErrLostLeadership)
	}
	return ErrLostLeadership
}

func (e *Elector) becameLeader() {
	e.leading.Store(true)
	close(e.elected)
	e.log.Info("became the leader")
	if e.opts.OnElected != nil {
		e.opts.OnElected()
	}
	bus.Publish(e.bus, events.BecameLeader{Meta: events.NewMeta(""), Identity: e.opts.Identity})
}
