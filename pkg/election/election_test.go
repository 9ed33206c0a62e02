package election_test

import (
	"context"
	"io"
	"log/slog"
	"regexp"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/musterd/musterd/internal/kubetest"
	"github.com/musterd/musterd/internal/logtest"
	"github.com/musterd/musterd/pkg/bus"
	"github.com/musterd/musterd/pkg/election"
	"github.com/musterd/musterd/pkg/events"
)

// deadline bounds the waits on a real API server; they poll, they never
// sleep a fixed time.
const deadline = 30 * time.Second

type recorder struct {
	mu  sync.Mutex
	got []string
}

func (r *recorder) list() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.got...)
}

func newBus(t *testing.T) (*bus.Bus, *recorder) {
	b := bus.New(bus.Options{})
	r := &recorder{}
	_, err := b.Subscribe(bus.SubscriberOptions{Name: "recorder", Delivery: bus.Unbounded(), Handlers: []bus.Handler{
		bus.On(func(e events.BecameLeader) {
			r.mu.Lock()
			r.got = append(r.got, "BecameLeader "+e.Identity)
			r.mu.Unlock()
		}),
		bus.On(func(e events.LostLeadership) {
			r.mu.Lock()
			r.got = append(r.got, "LostLeadership "+e.Identity)
			r.mu.Unlock()
		}),
	}})
	require.NoError(t, err)
	b.Start()
	t.Cleanup(b.Close)
	return b, r
}

type replica struct {
	e      *election.Elector
	log    *logtest.Buffer
	cancel context.CancelFunc
	result func() error // Start's error, once it returned
	passes atomic.Int32 // OnElected calls
	lost   chan error
}

// shortLease and longLease are lease durations: one that expires within
// a test's deadline, and one that cannot, so that a replica taking over
// from a leader with the long one proves the Lease was released.
const (
	shortLease = 3 * time.Second
	longLease  = time.Hour
)

func start(t *testing.T, cp *kubetest.ControlPlane, b *bus.Bus, identity string, ready <-chan struct{}, lease time.Duration) *replica {
	r := &replica{lost: make(chan error, 1), log: &logtest.Buffer{}}
	var err error
	r.e, err = election.New(b, election.Options{
		Config: cp.Config, Namespace: "default", ID: "musterd-test", Identity: identity,
		LeaseDuration: lease, RenewDeadline: 2 * time.Second, RetryPeriod: 200 * time.Millisecond,
		Ready:     ready,
		OnElected: func() { r.passes.Add(1) },
		OnLost:    func(err error) { r.lost <- err },
		Logger:    slog.New(slog.NewTextHandler(io.MultiWriter(r.log, t.Output()), nil)),
	})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	r.cancel = cancel
	done := make(chan error, 1)
	go func() { done <- r.e.Start(ctx) }()
	r.result = sync.OnceValue(func() error { return <-done })
	t.Cleanup(func() { cancel(); _ = r.result() })
	return r
}

func holder(t *testing.T, cp *kubetest.ControlPlane) string {
	var lease coordinationv1.Lease
	require.NoError(t, cp.Client.Get(t.Context(), client.ObjectKey{Namespace: "default", Name: "musterd-test"}, &lease))
	return ptr.Deref(lease.Spec.HolderIdentity, "")
}

func elected(r *replica) bool {
	select {
	case <-r.e.Elected():
		return true
	default:
		return false
	}
}

func TestOneLeaderAtATimeAndACleanStopHandsOver(t *testing.T) {
	cp := kubetest.Start(t, kubetest.Options{})
	b, rec := newBus(t)

	// a's Lease lasts an hour: only its release can hand it over within
	// the test's deadline.
	a := start(t, cp, b, "a", nil, longLease)
	require.Eventually(t, func() bool { return elected(a) }, deadline, 20*time.Millisecond)
	assert.Equal(t, "a", holder(t, cp))
	assert.Equal(t, int32(1), a.passes.Load(), "the new leader asks for its full pass once")

	// b campaigns only once it is ready (its index warm): it must not
	// even look at the Lease before.
	ready := make(chan struct{})
	bb := start(t, cp, b, "b", ready, longLease)
	assert.NotContains(t, bb.log.String(), "campaigning", "b campaigns only once ready")
	close(ready)
	// b read the Lease, found a holding it, and stays a follower.
	sawA := regexp.MustCompile(`msg="another replica leads" .*identity=b leader=a\n`)
	require.Eventually(t, func() bool { return sawA.MatchString(bb.log.String()) }, deadline, 20*time.Millisecond)
	assert.False(t, elected(bb), "a holds the Lease")
	assert.Equal(t, "a", holder(t, cp))
	assert.Zero(t, bb.passes.Load())
	identity, leading := a.e.Leader()
	assert.Equal(t, "a", identity)
	assert.True(t, leading)
	require.Eventually(t, func() bool {
		identity, leading := bb.e.Leader()
		return identity == "a" && !leading
	}, deadline, 20*time.Millisecond, "a follower knows the leader, for the API to name it")

	// A clean stop releases the Lease: b takes it over at a retry, not an
	// hour later.
	a.cancel()
	require.NoError(t, a.result())
	assert.Contains(t, a.log.String(), "stopped; lease released")
	require.Eventually(t, func() bool { return elected(bb) }, deadline, 20*time.Millisecond,
		"b takes over the released Lease long before it would have expired")
	assert.Equal(t, "b", holder(t, cp))
	identity, leading = bb.e.Leader()
	assert.Equal(t, "b", identity)
	assert.True(t, leading)
	assert.Equal(t, int32(1), bb.passes.Load())
	require.Eventually(t, func() bool { return len(rec.list()) == 2 }, deadline, 20*time.Millisecond)
	assert.Equal(t, []string{"BecameLeader a", "BecameLeader b"}, rec.list())
}

func TestALeaderThatCannotRenewLosesTheLeaseAndSaysSo(t *testing.T) {
	cp := kubetest.Start(t, kubetest.Options{})
	b, rec := newBus(t)
	a := start(t, cp, b, "a", nil, shortLease)
	require.Eventually(t, func() bool { return elected(a) }, deadline, 20*time.Millisecond)

	// Another holder takes the Lease over (as after a partition): a's
	// renewals fail until its renew deadline.
	require.Eventually(t, func() bool {
		var lease coordinationv1.Lease
		if err := cp.Client.Get(t.Context(), client.ObjectKey{Namespace: "default", Name: "musterd-test"}, &lease); err != nil {
			return false
		}
		lease.Spec.HolderIdentity = ptr.To("thief")
		lease.Spec.LeaseDurationSeconds = ptr.To[int32](3600)
		lease.Spec.RenewTime = &metav1.MicroTime{Time: time.Now()}
		return cp.Client.Update(t.Context(), &lease) == nil
	}, deadline, 50*time.Millisecond)

	select {
	case err := <-a.lost:
		assert.ErrorIs(t, err, election.ErrLostLeadership)
	case <-time.After(deadline):
		t.Fatal("the leader never noticed it lost the Lease")
	}
	err := a.result()
	assert.ErrorIs(t, err, election.ErrLostLeadership, "Start returns: the process is to exit")
	require.Eventually(t, func() bool { return len(rec.list()) == 2 }, deadline, 20*time.Millisecond)
	assert.Equal(t, []string{"BecameLeader a", "LostLeadership a"}, rec.list())
}

func TestBadTimingsAreRefused(t *testing.T) {
	b := bus.New(bus.Options{})
	defer b.Close()
	_, err := election.New(b, election.Options{Config: &rest.Config{}, Namespace: "default", ID: "x",
		LeaseDuration: time.Second, RenewDeadline: 2 * time.Second})
	assert.ErrorContains(t, err, "want lease duration (1s) > renew deadline (2s) > retry period (2s)")
}
