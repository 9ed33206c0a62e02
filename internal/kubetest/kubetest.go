//go:build !windows

package kubetest

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/musterd/musterd/internal/logtest"
	"github.com/musterd/musterd/internal/modroot"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// ControlPlane is a running etcd and kube-apiserver with musterd's CRDs.
type ControlPlane struct {
	// Config connects as an administrator (group system:masters).
	Config *rest.Config
	// Client is a controller-runtime client with [Scheme], as Config's user.
	Client client.Client
	// StartDuration is how long the first start took, CRDs included.
	StartDuration time.Duration

	env     *envtest.Environment
	logPath string
	mu      sync.Mutex
	// kubeconfigs caches a kubeconfig file per user, for Kubectl.
	kubeconfigs map[*envtest.AuthenticatedUser]string
	tempDir     string
}

// Start starts a control plane for t and installs musterd's CRDs; t.Cleanup
// stops it. It skips t, or fails it under MUSTERD_REQUIRE_ENVTEST=1, when
// the binaries are missing.
func Start(t testing.TB, opts Options) *ControlPlane {
	t.Helper()
	root, err := modroot.Dir()
	if err != nil {
		t.Fatal(err)
	}
	assets := AssetsDir(t, root)
	if opts.StartTimeout == 0 {
		opts.StartTimeout = 60 * time.Second
	}
	if opts.StopTimeout == 0 {
		opts.StopTimeout = 20 * time.Second
	}

	dir := t.TempDir()
	logPath := filepath.Join(dir, "control-plane.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = logFile.Close() })
	certDir := filepath.Join(dir, "apiserver")
	if err := os.Mkdir(certDir, 0o700); err != nil {
		t.Fatal(err)
	}

	env := &envtest.Environment{
		BinaryAssetsDirectory: assets,
		CRDDirectoryPaths:     []string{filepath.Join(root, "config", "crd", "bases")},
		ErrorIfCRDPathMissing: true,
		Scheme:                Scheme(),
		ControlPlane: envtest.ControlPlane{
			// A CertDir of our own, not a random one envtest deletes on
			// Stop: a restarted API server keeps its serving certificate,
			// so clients made before keep trusting it.
			APIServer: &envtest.APIServer{CertDir: certDir, Out: logFile, Err: logFile},
			Etcd:      &envtest.Etcd{Out: logFile, Err: logFile},
		},
		ControlPlaneStartTimeout: opts.StartTimeout,
		ControlPlaneStopTimeout:  opts.StopTimeout,
	}
	configureQuickStop(env.ControlPlane.APIServer)
	began := time.Now()
	cfg, err := env.Start()
	if err != nil {
		_ = env.Stop()
		t.Fatalf("kubetest: starting kube-apiserver and etcd from %s: %v\n%s", assets, err, tail(logPath, 20))
	}
	cp := &ControlPlane{
		Config:        cfg,
		StartDuration: time.Since(began),
		env:           env,
		logPath:       logPath,
		kubeconfigs:   map[*envtest.AuthenticatedUser]string{},
		tempDir:       dir,
	}
	t.Cleanup(func() {
		if err := env.Stop(); err != nil {
			t.Errorf("kubetest: stopping the control plane: %v", err)
		}
	})
	cp.Client, err = client.New(cfg, client.Options{Scheme: env.Scheme})
	if err != nil {
		t.Fatalf("kubetest: client for %s: %v", cfg.Host, err)
	}
	return cp
}

// StopAPIServer stops the kube-apiserver gracefully; etcd keeps running,
// with every object.
func (cp *ControlPlane) StopAPIServer(t testing.TB) {
	t.Helper()
	if err := cp.env.ControlPlane.APIServer.Stop(); err != nil {
		t.Fatalf("kubetest: stopping kube-apiserver: %v\n%s", err, tail(cp.logPath, 20))
	}
}

// StartAPIServer starts a kube-apiserver stopped by StopAPIServer again, on
// the same address and with the same certificates, and returns when it
// reports healthy.
func (cp *ControlPlane) StartAPIServer(t testing.TB) {
	t.Helper()
	if err := cp.env.ControlPlane.APIServer.Start(); err != nil {
		t.Fatalf("kubetest: restarting kube-apiserver on %s: %v\n%s", cp.Config.Host, err, tail(cp.logPath, 20))
	}
}

// AddUser provisions a user authenticated by a client certificate, in the
// given groups, and returns it; its Config() connects as that user. A user
// outside system:masters can do only what RBAC objects grant it.
func (cp *ControlPlane) AddUser(t testing.TB, name string, groups ...string) *envtest.AuthenticatedUser {
	t.Helper()
	user, err := cp.env.AddUser(envtest.User{Name: name, Groups: groups}, rest.CopyConfig(cp.Config))
	if err != nil {
		t.Fatalf("kubetest: adding user %s: %v", name, err)
	}
	return user
}

// Kubeconfig writes a kubeconfig file for user (the administrator when nil)
// into the test's temporary directory and returns its path.
func (cp *ControlPlane) Kubeconfig(t testing.TB, user *envtest.AuthenticatedUser) string {
	t.Helper()
	cp.mu.Lock()
	defer cp.mu.Unlock()
	if path, ok := cp.kubeconfigs[user]; ok {
		return path
	}
	var (
		data []byte
		err  error
	)
	if user == nil {
		data = cp.env.KubeConfig
	} else {
		data, err = user.KubeConfig()
	}
	if err != nil {
		t.Fatalf("kubetest: kubeconfig: %v", err)
	}
	path := filepath.Join(cp.tempDir, fmt.Sprintf("kubeconfig-%d", len(cp.kubeconfigs)))
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	cp.kubeconfigs[user] = path
	return path
}

// Kubectl runs the built kubectl with args as user (the administrator when
// nil) and returns its standard output; a non-zero exit is an error that
// carries its standard error.
func (cp *ControlPlane) Kubectl(ctx context.Context, t testing.TB, user *envtest.AuthenticatedUser, args ...string) (string, error) {
	t.Helper()
	cmd := exec.CommandContext(ctx, cp.env.ControlPlane.KubectlPath,
		append([]string{"--kubeconfig", cp.Kubeconfig(t, user)}, args...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.String(), fmt.Errorf("kubectl %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return stdout.String(), nil
}

// configureQuickStop bounds the API server's graceful stop by
// [WatchDrainGracePeriod], and sets no delay before it.
func configureQuickStop(api *envtest.APIServer) {
	api.Configure().
		Set("shutdown-watch-termination-grace-period", WatchDrainGracePeriod.String()).
		Set("shutdown-delay-duration", "0s")
}

// tail returns the last n lines of the control plane's log at path, for
// error messages.
func tail(path string, n int) string {
	return "control plane log (last lines):\n" + logtest.Tail(path, n)
}
