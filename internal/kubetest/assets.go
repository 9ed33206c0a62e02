package kubetest

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"

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

// Scheme holds client-go's built-in types and musterd's v1alpha1 types.
func Scheme() *runtime.Scheme {
	s := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(s))
	utilruntime.Must(musterv1alpha1.AddToScheme(s))
	return s
}

// WatchDrainGracePeriod is how long a stopping kube-apiserver waits for the
// watches clients hold open to drain. Without a bound its graceful stop
// waits out --request-timeout (1m) whenever an informer watches, as every
// controller's does; with it an outage begins within about a second.
const WatchDrainGracePeriod = 2 * time.Second

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
