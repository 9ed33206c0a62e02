package kubetest

import (
	"context"
	"testing"
	"time"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// windowsSkip says why no control plane starts on Windows. envtest's
// process package of controller-runtime v0.25 declares signalProcess twice
// there and does not compile (fixed upstream by
// kubernetes-sigs/controller-runtime#3586, not yet released), so this
// package stands in for it with a Start that skips: the tests that need
// Kubernetes type-check on Windows and run on Unix.
const windowsSkip = "kubetest: no Kubernetes control plane on windows: controller-runtime v0.25's envtest does not compile there"

// AuthenticatedUser stands in for envtest's user type, which Windows builds
// cannot import.
type AuthenticatedUser struct{}

// Config is never reached: no user is added on Windows.
func (*AuthenticatedUser) Config() *rest.Config { panic(windowsSkip) }

// ControlPlane has the fields of the Unix one; on Windows none is started.
type ControlPlane struct {
	Config        *rest.Config
	Client        client.Client
	StartDuration time.Duration
}

// Start skips t: see windowsSkip.
func Start(t testing.TB, _ Options) *ControlPlane {
	t.Helper()
	t.Skip(windowsSkip)
	return nil
}

// StopAPIServer is never reached: Start skipped.
func (cp *ControlPlane) StopAPIServer(t testing.TB) { t.Fatal(windowsSkip) }

// StartAPIServer is never reached: Start skipped.
func (cp *ControlPlane) StartAPIServer(t testing.TB) { t.Fatal(windowsSkip) }

// AddUser is never reached: Start skipped.
func (cp *ControlPlane) AddUser(t testing.TB, _ string, _ ...string) *AuthenticatedUser {
	t.Fatal(windowsSkip)
	return nil
}

// Kubeconfig is never reached: Start skipped.
func (cp *ControlPlane) Kubeconfig(t testing.TB, _ *AuthenticatedUser) string {
	t.Fatal(windowsSkip)
	return ""
}

// Kubectl is never reached: Start skipped.
func (cp *ControlPlane) Kubectl(_ context.Context, t testing.TB, _ *AuthenticatedUser, _ ...string) (string, error) {
	t.Fatal(windowsSkip)
	return "", nil
}
