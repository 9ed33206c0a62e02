package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlconfig "sigs.k8s.io/controller-runtime/pkg/client/config"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/musterd/musterd/pkg/apis/muster/v1alpha1"
	"github.com/musterd/musterd/pkg/bus"
	"github.com/musterd/musterd/pkg/election"
	"github.com/musterd/musterd/pkg/events"
	"github.com/musterd/musterd/pkg/kubeevents"
	"github.com/musterd/musterd/pkg/lifecycle"
	statuskube "github.com/musterd/musterd/pkg/statusync/kube"
	"github.com/musterd/musterd/pkg/watchers/kube"
)

// kubeConfig is musterd run's Kubernetes mode.
type kubeConfig struct {
	enabled    bool
	namespace  string // empty: all namespaces
	kubeconfig string // empty: $KUBECONFIG, in-cluster, ~/.kube/config
	// connectTimeout bounds the start-up wait for a usable API server and
	// the informers' first sync; then musterd fails, never falls back.
	connectTimeout time.Duration

	leaderElect             bool
	leaderElectionID        string
	leaderElectionNamespace string // default: namespace, else the pod's
	leaseDuration           time.Duration
	renewDeadline           time.Duration
	retryPeriod             time.Duration

	// podName and podNamespace name this replica's pod, whose MCP role
	// label it keeps with -mcp-listen (kube_mcp.go).
	podName, podNamespace string

	// rest reaches the API server; set by serve once it answered.
	rest *rest.Config
}

const defaultLeaderElectionID = "musterd-leader"

// inClusterNamespace holds the pod's namespace.
const inClusterNamespace = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"

func defaultKubeConfig() kubeConfig {
	return kubeConfig{
		connectTimeout:   30 * time.Second,
		leaderElectionID: defaultLeaderElectionID,
		leaseDuration:    election.DefaultLeaseDuration,
		renewDeadline:    election.DefaultRenewDeadline,
		retryPeriod:      election.DefaultRetryPeriod,
	}
}

func (k *kubeConfig) register(fset *flag.FlagSet) {
	fset.BoolVar(&k.enabled, "kubernetes", k.enabled, "Kubernetes mode: read MCPServer and Workflow custom resources and write their status subresource, instead of the config dir's files")
	fset.StringVar(&k.namespace, "namespace", k.namespace, "Kubernetes mode: watch this namespace only (default all namespaces)")
	fset.StringVar(&k.kubeconfig, "kubeconfig", k.kubeconfig, "Kubernetes mode: kubeconfig file (default $KUBECONFIG, in-cluster, ~/.kube/config)")
	fset.DurationVar(&k.connectTimeout, "kube-connect-timeout", k.connectTimeout, "Kubernetes mode: how long to retry an unreachable or refusing API server at start before failing")
	fset.BoolVar(&k.leaderElect, "leader-elect", k.leaderElect, "Kubernetes mode: only the replica holding the Lease reconciles and writes status")
	fset.StringVar(&k.leaderElectionID, "leader-election-id", k.leaderElectionID, "name of the leader election Lease")
	fset.StringVar(&k.leaderElectionNamespace, "leader-election-namespace", k.leaderElectionNamespace, "namespace of the Lease (default -namespace, else the pod's)")
	fset.DurationVar(&k.leaseDuration, "leader-election-lease-duration", k.leaseDuration, "how long a Lease holds without renewal; a new leader takes over at most this long after the old one vanished")
	fset.DurationVar(&k.renewDeadline, "leader-election-renew-deadline", k.renewDeadline, "how long the leader retries renewing before it gives the Lease up and exits")
	fset.DurationVar(&k.retryPeriod, "leader-election-retry-period", k.retryPeriod, "interval of the Lease's acquire and renew attempts")
	fset.StringVar(&k.podName, "pod-name", os.Getenv("POD_NAME"), "Kubernetes mode with -mcp-listen: this replica's pod, labelled "+mcpRoleLabel+"=leader while it leads (for a Service routing MCP to the leader alone) and =follower otherwise (default $POD_NAME)")
	fset.StringVar(&k.podNamespace, "pod-namespace", os.Getenv("POD_NAMESPACE"), "Kubernetes mode: the namespace of -pod-name (default $POD_NAMESPACE, else -leader-election-namespace)")
}

// check validates the Kubernetes settings once flags and config.yaml are
// read.
func (k *kubeConfig) check() error {
	if !k.enabled {
		return nil
	}
	if k.connectTimeout <= 0 {
		return fmt.Errorf("-kube-connect-timeout must be positive, not %s", k.connectTimeout)
	}
	if !k.leaderElect {
		return nil
	}
	if k.leaderElectionID == "" {
		return errors.New("-leader-election-id must not be empty")
	}
	if !(k.leaseDuration > k.renewDeadline && k.renewDeadline > k.retryPeriod && k.retryPeriod > 0) {
		return fmt.Errorf("leader election wants -leader-election-lease-duration (%s) > -leader-election-renew-deadline (%s) > -leader-election-retry-period (%s) > 0",
			k.leaseDuration, k.renewDeadline, k.retryPeriod)
	}
	if k.leaderElectionNamespace == "" {
		k.leaderElectionNamespace = k.namespace
	}
	if k.leaderElectionNamespace == "" {
		data, err := os.ReadFile(inClusterNamespace)
		if err != nil {
			return errors.New("-leader-elect needs -leader-election-namespace (or -namespace) outside a pod")
		}
		k.leaderElectionNamespace = strings.TrimSpace(string(data))
	}
	if k.podNamespace == "" {
		k.podNamespace = k.leaderElectionNamespace
	}
	return nil
}

// connect loads the client configuration and waits, at most
// connectTimeout, for an API server that serves the muster CRDs to this
// identity. Its error names the cause; there is no fallback.
func (k *kubeConfig) connect(ctx context.Context, log *slog.Logger) error {
	// client-go (klog) and controller-runtime log through musterd's
	// logger, in its format and level.
	klog.SetSlogLogger(log)
	ctrllog.SetLogger(logr.FromSlogHandler(log.Handler()))
	var (
		cfg *rest.Config
		err error
	)
	if k.kubeconfig != "" {
		cfg, err = clientcmd.BuildConfigFromFlags("", k.kubeconfig)
	} else {
		cfg, err = ctrlconfig.GetConfig()
	}
	if err != nil {
		return fmt.Errorf("kubernetes mode: no API server configuration: %w", err)
	}
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return fmt.Errorf("kubernetes mode: %w", err)
	}
	scheme, err := kube.Scheme()
	if err != nil {
		return err
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return fmt.Errorf("kubernetes mode: %w", err)
	}
	// Usable means: the CRDs are served, and this identity may list both
	// kinds where it watches them (what the informers will do).
	probe := func(ctx context.Context) error {
		if _, err := dc.ServerResourcesForGroupVersion(v1alpha1.GroupVersion.String()); err != nil {
			return err
		}
		for _, list := range []client.ObjectList{&v1alpha1.MCPServerList{}, &v1alpha1.WorkflowList{}} {
			if err := c.List(ctx, list, client.InNamespace(k.namespace), client.Limit(1)); err != nil {
				return err
			}
		}
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, k.connectTimeout)
	defer cancel()
	for attempt := 1; ; attempt++ {
		perr := probe(ctx)
		if perr == nil {
			k.rest = cfg
			return nil
		}
		if err == nil || ctx.Err() == nil {
			err = perr // not the deadline's own error, when there was a cause
		}
		log.Warn("kubernetes mode: API server not usable yet; retrying", "host", cfg.Host, "attempt", attempt,
			"category", statuskube.Category(err), "error", err)
		select {
		case <-ctx.Done():
			if errors.Is(context.Cause(ctx), context.Canceled) {
				return ctx.Err()
			}
			return fmt.Errorf("kubernetes mode: the API server at %s is not usable after %s (%s): %w; musterd does not fall back to filesystem mode",
				cfg.Host, k.connectTimeout, statuskube.Category(err), err)
		case <-time.After(min(time.Second*time.Duration(attempt), 5*time.Second)):
		}
	}
}

// kubeStages are Kubernetes mode's parts of the daemon.
type kubeStages struct {
	watcher *kube.Watcher
	writer  *statuskube.Writer
	elector *election.Elector // nil without -leader-elect
	// events records Kubernetes Events; leader-only.
	events *kubeevents.Recorder
	// lost receives ErrLostLeadership.
	lost chan error
	// client changes the definitions when the core tools ask
	// (declare.Kube).
	client client.Client
}

// newKubeStages makes the watcher, the status writer and, with
// -leader-elect, the elector; d's pipeline does not exist yet, so the
// callbacks reach it through d.
func newKubeStages(cfg daemonConfig, d *daemon, b *bus.Bus, log *slog.Logger) (*kubeStages, error) {
	k := cfg.kube
	s := &kubeStages{lost: make(chan error, 1)}
	var err error
	if s.watcher, err = kube.New(b, kube.Options{Config: k.rest, Index: d.Index, Namespace: k.namespace,
		SyncTimeout: k.connectTimeout, Logger: log}); err != nil {
		return nil, err
	}
	var elected <-chan struct{}
	if k.leaderElect {
		if s.elector, err = election.New(b, election.Options{
			Config: k.rest, Namespace: k.leaderElectionNamespace, ID: k.leaderElectionID,
			LeaseDuration: k.leaseDuration, RenewDeadline: k.renewDeadline, RetryPeriod: k.retryPeriod,
			Ready: s.watcher.Synced(),
			// The triggers of the initial listing reached no coordinator on
			// this replica: the new leader reconciles everything once.
			OnElected: func() { d.Coordinator.ReconcileAll() },
			OnLost:    func(err error) { s.lost <- err },
			Logger:    log,
		}); err != nil {
			return nil, err
		}
		elected = s.elector.Elected()
	}
	scheme, err := kube.Scheme()
	if err != nil {
		return nil, err
	}
	c, err := client.New(k.rest, client.Options{Scheme: scheme})
	if err != nil {
		return nil, fmt.Errorf("kubernetes mode: %w", err)
	}
	s.client = c
	if s.writer, err = statuskube.New(statuskube.Options{
		Client:         c,
		ResourceStatus: func(key events.Key) (any, bool) { return d.Reconcilers.Status(key) },
		DefinitionError: func(key events.Key) error {
			e, _ := d.Index.Get(key)
			return e.Err
		},
		Elected: elected,
	}); err != nil {
		return nil, err
	}
	if s.events, err = kubeevents.New(b, kubeevents.Options{
		Config:         k.rest,
		ResourceStatus: func(key events.Key) (any, bool) { return d.Reconcilers.Status(key) },
		DefinitionError: func(key events.Key) error {
			e, _ := d.Index.Get(key)
			return e.Err
		},
		StepCount: musterTranslation(d).StepCount,
		Namespace: k.namespace,
		Logger:    log,
	}); err != nil {
		return nil, err
	}
	return s, nil
}

// add registers the stages that join the pipeline's own: the Events
// recorder, on the leader only, like the coordinator whose outcomes it
// reports; and, when MCP is served to the network under leader election,
// the label that routes it to the leader, on every replica.
func (s *kubeStages) add(d *daemon, cfg daemonConfig, log *slog.Logger) error {
	if err := d.Add(s.events, lifecycle.LeaderOnly()); err != nil {
		return err
	}
	if cfg.mcpListen == "" || s.elector == nil {
		return nil
	}
	if cfg.kube.podName == "" {
		return errNoPodName
	}
	role, err := newMCPRole(cfg.kube, cfg.kube.podNamespace, cfg.kube.podName, s.elector.Elected(), func() bool { return d.Ready() }, log)
	if err != nil {
		return err
	}
	return d.Add(role)
}

// foundation is the elector, placed between the recorder and the
// supervisor's stopper: it stops after the servers, so the Lease is
// released only once they are gone.
func (s *kubeStages) foundation() []lifecycle.Component {
	if s.elector == nil {
		return nil
	}
	return []lifecycle.Component{s.elector}
}

// elected is lifecycle's Options.Elected.
func (s *kubeStages) elected() <-chan struct{} {
	if s.elector == nil {
		return nil
	}
	return s.elector.Elected()
}

// leader is api.Options.Leader: nil without -leader-elect, where this
// replica always leads.
func (s *kubeStages) leader() func() (string, bool) {
	if s.elector == nil {
		return nil
	}
	return s.elector.Leader
}

// ready is /readyz in Kubernetes mode: the leader is ready once its first
// full reconcile is done, a follower once its index is warm.
func (s *kubeStages) ready(leaderReady func() bool) func() bool {
	if s.elector == nil {
		return leaderReady
	}
	return func() bool {
		select {
		case <-s.elector.Elected():
			return leaderReady()
		default:
		}
		select {
		case <-s.watcher.Synced():
			return true
		default:
			return false
		}
	}
}
