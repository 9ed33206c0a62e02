package kubetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	musterv1alpha1 "github.com/musterd/musterd/pkg/apis/muster/v1alpha1"
)

// KubeVersion is the Kubernetes release whose binaries the tests run; it
// matches client-go's minor version and the Makefile's KUBE_VERSION.
const KubeVersion = "v1.37.0"

// Environment variables read by [Start].
const (
	// AssetsEnv names a directory holding kube-apiserver, etcd and kubectl,
	// overriding bin/k8s/<KubeVersion> (the variable envtest itself reads).
	AssetsEnv = "KUBEBUILDER_ASSETS"
	// RequireEnv, set to 1, turns missing binaries from a skip into a
	// failure. `make test` sets it.
	RequireEnv = "MUSTERD_REQUIRE_ENVTEST"
)

// Options configure [Start]. The zero value is the default.
type Options struct {
	// StartTimeout bounds the start of each of etcd and the API server.
	// Zero means 60s: generous, for a loaded 2-core machine.
	StartTimeout time.Duration
	// StopTimeout bounds each one's graceful stop. Zero means 20s.
	StopTimeout time.Duration
}

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

// Scheme holds client-go's built-in types and musterd's v1alpha1 types.
func Scheme() *runtime.Scheme {
	s := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(s))
	utilruntime.Must(musterv1alpha1.AddToScheme(s))
	return s
}

// Start starts a control plane for t and installs musterd's CRDs; t.Cleanup
// stops it. It skips t, or fails it under MUSTERD_REQUIRE_ENVTEST=1, when
// the binaries are missing.
func Start(t testing.TB, opts Options) *ControlPlane {
	t.Helper()
	root, err := ModuleRoot()
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

// AssetsDir returns the directory with kube-apiserver, etcd and kubectl:
// KUBEBUILDER_ASSETS when set, else <root>/bin/k8s/<KubeVersion>. When one
// is missing it skips t, or fails it under MUSTERD_REQUIRE_ENVTEST=1.
func AssetsDir(t testing.TB, root string) string {
	t.Helper()
	dir := os.Getenv(AssetsEnv)
	if dir == "" {
		dir = filepath.Join(root, "bin", "k8s", KubeVersion)
	}
	var missing []string
	for _, name := range []string{"kube-apiserver", "etcd", "kubectl"} {
		if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
			missing = append(missing, name)
		}
	}
	if len(missing) > 0 {
		msg := fmt.Sprintf("kubetest: %s missing in %s; run `make envtest-assets` to build them from the Go module proxy (or set %s)",
			strings.Join(missing, ", "), dir, AssetsEnv)
		if os.Getenv(RequireEnv) == "1" {
			t.Fatal(msg + "; " + RequireEnv + "=1 makes this a failure")
		}
		t.Skip(msg)
	}
	return dir
}

// ModuleRoot returns the directory of musterd's go.mod, searched upwards
// from the working directory (a test's is its package's directory).
func ModuleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		data, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil && bytes.HasPrefix(data, []byte("module github.com/musterd/musterd\n")) {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("kubetest: no go.mod of module github.com/musterd/musterd above the working directory")
		}
		dir = parent
	}
}

// tail returns the last n lines of the file at path, for error messages.
func tail(path string, n int) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return "control plane log (last lines):\n" + strings.Join(lines, "\n")
}

// WatchDrainGracePeriod is how long a stopping kube-apiserver waits for the
// watches clients hold open to drain. Without a bound its graceful stop
// waits out --request-timeout (1m) whenever an informer watches, as every
// controller's does; with it an outage begins within about a second.
const WatchDrainGracePeriod = 2 * time.Second

// configureQuickStop bounds the API server's graceful stop by
// [WatchDrainGracePeriod], and sets no delay before it.
func configureQuickStop(api *envtest.APIServer) {
	api.Configure().
		Set("shutdown-watch-termination-grace-period", WatchDrainGracePeriod.String()).
		Set("shutdown-delay-duration", "0s")
}
