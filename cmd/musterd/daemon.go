package main

import (
	"context"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/musterd/musterd/pkg/api"
	"github.com/musterd/musterd/pkg/bus"
	"github.com/musterd/musterd/pkg/catalogue"
	"github.com/musterd/musterd/pkg/controls"
	"github.com/musterd/musterd/pkg/coordinator"
	"github.com/musterd/musterd/pkg/coretools"
	"github.com/musterd/musterd/pkg/debouncer"
	"github.com/musterd/musterd/pkg/election"
	"github.com/musterd/musterd/pkg/events"
	"github.com/musterd/musterd/pkg/eventtrace"
	"github.com/musterd/musterd/pkg/lifecycle"
	"github.com/musterd/musterd/pkg/mcpserve"
	"github.com/musterd/musterd/pkg/musterevents"
	oauthconfig "github.com/musterd/musterd/pkg/oauth/config"
	"github.com/musterd/musterd/pkg/pipeline"
	"github.com/musterd/musterd/pkg/reconcilers"
	"github.com/musterd/musterd/pkg/reconcilers/mcpserver"
	"github.com/musterd/musterd/pkg/reconcilers/workflow"
	"github.com/musterd/musterd/pkg/resources"
	"github.com/musterd/musterd/pkg/router"
	"github.com/musterd/musterd/pkg/services"
	"github.com/musterd/musterd/pkg/statusync"
	"github.com/musterd/musterd/pkg/statusync/files"
	"github.com/musterd/musterd/pkg/supervisor"
	"github.com/musterd/musterd/pkg/ui"
	"github.com/musterd/musterd/pkg/watchers/fs"
	"github.com/musterd/musterd/pkg/watchers/supervised"
	"github.com/musterd/musterd/pkg/workflowrun"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// daemonConfig is musterd run's configuration: defaults, then the config
// dir's config.yaml, then the flags given on the command line.
type daemonConfig struct {
	configDir   string
	stateDir    string
	listen      string
	allowRemote bool
	// healthListen is the address of the probe listener (/healthz, /readyz,
	// /metrics only); none if empty.
	healthListen string
	// mcpListen is the address of a listener serving only the MCP
	// endpoint; none if empty.
	mcpListen        string
	logLevel         slog.Level
	logFormat        string
	debounce         time.Duration
	workers          int
	reconcileTimeout time.Duration
	resync           time.Duration
	rescan           time.Duration
	stopTimeout      time.Duration
	tokenFile        string
	toolPrefix       string
	// record is the file every bus event is written to, as a trace; none
	// if empty.
	record string
	// token is the API's bearer token, from tokenFile or MUSTERD_TOKEN. It
	// is never logged.
	token string
	// inheritEnv gives stdio servers all of musterd's environment, not only
	// PATH and HOME (their spec's env on top, either way).
	inheritEnv bool
	// supervisor's options: starts at once, a start's bound when a spec
	// sets no timeout, the health ping's period and bound.
	startConcurrency int
	startTimeout     time.Duration
	pingInterval     time.Duration
	pingTimeout      time.Duration
	// kube is Kubernetes mode (kubernetes.go).
	kube kubeConfig
	// disabledKinds are the kinds not reconciled at start (their kind
	// names, "MCPServer"); musterd enable KIND turns one on.
	disabledKinds []string
	// extraCAFile holds PEM certificates trusted for outbound HTTPS beside
	// the system's; extraCAs is the pool of both, nil without a file
	// (outbound.go).
	extraCAFile string
	extraCAs    *x509.CertPool
	// oauth is config.yaml's aggregator.oauth section, checked; muster's
	// defaults without one.
	oauth oauthconfig.Config
}

// The coordinator's retry settings. musterd run has no flags for them; they
// are passed explicitly, with the coordinator's default values, so that a
// trace's header states what is in force.
const (
	retryBackoffBase = time.Second
	retryBackoffMax  = 5 * time.Minute
	retryJitter      = 0.1
	retryMax         = 5
)

func defaultDaemonConfig() daemonConfig {
	return daemonConfig{
		configDir: defaultConfigDir(),
		listen:    "127.0.0.1:8090",
		logLevel:  slog.LevelInfo,
		logFormat: "text",
		debounce:  100 * time.Millisecond,
		workers:   2,
		// A reconcile no longer waits for an MCPServer's start (the
		// supervisor runs it), only for a stop: the supervisor's grace
		// period. The bound stays generous.
		reconcileTimeout: 5*time.Minute + 30*time.Second,
		startConcurrency: supervisor.DefaultStartConcurrency,
		startTimeout:     supervisor.DefaultStartTimeout,
		pingInterval:     supervisor.DefaultPingInterval,
		pingTimeout:      supervisor.DefaultPingTimeout,
		resync:           10 * time.Minute,
		rescan:           fs.DefaultRescanInterval,
		// Above the supervisor's shutdown (its SIGTERM grace, then SIGKILL).
		stopTimeout: supervised.DefaultShutdownTimeout + 5*time.Second,
		toolPrefix:  catalogue.DefaultPrefix,
		kube:        defaultKubeConfig(),
		oauth:       oauthconfig.Default(),
	}
}

// parseDaemonFlags reads the configuration. notes collects what a logger,
// which does not exist yet, should say about it.
func parseDaemonFlags(args []string, stderr io.Writer) (cfg daemonConfig, notes []string, err error) {
	cfg = defaultDaemonConfig()
	fset := flag.NewFlagSet("musterd run", flag.ContinueOnError)
	fset.SetOutput(stderr)
	fset.StringVar(&cfg.configDir, "config-dir", cfg.configDir, "directory holding mcpservers/, workflows/ and an optional config.yaml")
	fset.StringVar(&cfg.stateDir, "state-dir", "", "directory for status files (status/<kinds>/<namespace>/<name>.yaml); default the config dir")
	fset.StringVar(&cfg.listen, "listen", cfg.listen, "address of the HTTP API and metrics; loopback unless -allow-remote")
	fset.BoolVar(&cfg.allowRemote, "allow-remote", false, "allow -listen on a non-loopback address; an API token is then required")
	fset.StringVar(&cfg.healthListen, "health-listen", "", "address of a listener serving only /healthz, /readyz and /metrics, for probes and scrapes (default: none)")
	fset.StringVar(&cfg.mcpListen, "mcp-listen", "", "address of a listener serving only the MCP endpoint (/mcp, /mcp/direct, /sse, /message, /health), as in a pod behind a Service; a non-loopback address needs a token (default: none; the endpoint is on -listen either way)")
	fset.BoolVar(&cfg.inheritEnv, "inherit-env", false, "give stdio servers all of musterd's environment (default: their spec's env plus PATH and HOME)")
	fset.IntVar(&cfg.startConcurrency, "start-concurrency", cfg.startConcurrency, "MCP server starts under way at once; a start holds no reconcile worker")
	fset.DurationVar(&cfg.startTimeout, "start-timeout", cfg.startTimeout, "bound of an MCP server's start when its spec sets no timeout")
	fset.DurationVar(&cfg.pingInterval, "ping-interval", cfg.pingInterval, "period of each running MCP server's health ping")
	fset.DurationVar(&cfg.pingTimeout, "ping-timeout", cfg.pingTimeout, "how long a health ping may take before the server counts as failed")
	fset.TextVar(&cfg.logLevel, "log-level", cfg.logLevel, "debug, info, warn or error")
	fset.StringVar(&cfg.logFormat, "log-format", cfg.logFormat, "text or json")
	fset.DurationVar(&cfg.debounce, "debounce", cfg.debounce, "refractory period per resource: the first change reconciles at once, a burst once more at its end")
	fset.IntVar(&cfg.workers, "workers", cfg.workers, "concurrent reconciles")
	fset.DurationVar(&cfg.reconcileTimeout, "reconcile-timeout", cfg.reconcileTimeout, "deadline of one reconcile; above the longest MCPServer timeout")
	fset.DurationVar(&cfg.resync, "resync", cfg.resync, "period of the full level-triggered resync")
	fset.DurationVar(&cfg.rescan, "rescan", cfg.rescan, "period of the safety-net rescan of the config dir")
	fset.DurationVar(&cfg.stopTimeout, "stop-timeout", cfg.stopTimeout, "time allowed for a clean shutdown")
	fset.StringVar(&cfg.toolPrefix, "tool-prefix", cfg.toolPrefix, "global prefix of exposed tool names: {prefix}_{toolPrefix or server}_{tool}; empty for none")
	fset.StringVar(&cfg.tokenFile, "token-file", "", "file holding the bearer token that mutating API calls and the event streams need (else -api-token, else $MUSTERD_TOKEN; none: no token needed)")
	fset.StringVar(&cfg.token, "api-token", "", "the bearer token itself; anyone who can list processes reads a flag, so prefer $MUSTERD_TOKEN or -token-file")
	fset.StringVar(&cfg.record, "record", "", "write every bus event to this file as a trace (created or truncated; see docs/trace-format.md)")
	fset.StringVar(&cfg.extraCAFile, "extra-ca-file", "", "PEM file of CA certificates trusted beside the system's for outbound HTTPS: remote MCP servers and identity providers (muster's --extra-ca-file)")
	cfg.kube.register(fset)
	fset.Func("disable-kinds", "comma-separated kinds not reconciled at start (mcpservers, workflows); their changes are still watched, and \"musterd enable KIND\" reconciles them", func(v string) error {
		kinds, err := parseKinds(strings.Split(v, ","))
		cfg.disabledKinds = kinds
		return err
	})
	if err := fset.Parse(args); err != nil {
		return cfg, nil, err
	}
	if fset.NArg() > 0 {
		return cfg, nil, fmt.Errorf("unexpected argument %q", fset.Arg(0))
	}
	set := map[string]bool{}
	fset.Visit(func(f *flag.Flag) { set[f.Name] = true })
	notes, err = applyConfigFile(&cfg, filepath.Join(cfg.configDir, "config.yaml"), set)
	if err != nil {
		return cfg, nil, err
	}
	if cfg.stateDir == "" {
		cfg.stateDir = cfg.configDir
	}
	if cfg.logFormat != "text" && cfg.logFormat != "json" {
		return cfg, nil, fmt.Errorf("-log-format must be text or json, not %q", cfg.logFormat)
	}
	if cfg.workers < 1 {
		return cfg, nil, fmt.Errorf("-workers must be at least 1, not %d", cfg.workers)
	}
	if cfg.startConcurrency < 1 {
		return cfg, nil, fmt.Errorf("-start-concurrency must be at least 1, not %d", cfg.startConcurrency)
	}
	for name, d := range map[string]time.Duration{"start-timeout": cfg.startTimeout, "ping-interval": cfg.pingInterval, "ping-timeout": cfg.pingTimeout} {
		if d <= 0 {
			return cfg, nil, fmt.Errorf("-%s must be positive, not %v", name, d)
		}
	}
	if cfg.token, err = readToken(cfg.token, cfg.tokenFile); err != nil {
		return cfg, nil, err
	}
	if cfg.extraCAs, err = loadExtraCAs(cfg.extraCAFile); err != nil {
		return cfg, nil, err
	}
	// A caller's OAuth token guards as the static token does.
	guarded := cfg.token != "" || cfg.oauth.Server.Enabled
	if err := checkListen(cfg.listen, cfg.allowRemote, guarded); err != nil {
		return cfg, nil, err
	}
	if cfg.healthListen != "" {
		if _, _, err := net.SplitHostPort(cfg.healthListen); err != nil {
			return cfg, nil, fmt.Errorf("-health-listen %q: %w", cfg.healthListen, err)
		}
	}
	if cfg.mcpListen != "" {
		if err := checkMCPListen(cfg.mcpListen, guarded); err != nil {
			return cfg, nil, err
		}
	}
	if err := cfg.kube.check(); err != nil {
		return cfg, nil, err
	}
	return cfg, notes, nil
}

// readToken returns the API's token: from file, else the -api-token flag,
// else $MUSTERD_TOKEN. Naming two sources is an error, not a silent choice.
// It removes MUSTERD_TOKEN from musterd's environment, whichever source
// counts: nothing musterd starts (a child given -inherit-env, a helper)
// inherits the token.
func readToken(flagToken, file string) (string, error) {
	envToken := os.Getenv("MUSTERD_TOKEN")
	os.Unsetenv("MUSTERD_TOKEN")
	switch {
	case file != "" && flagToken != "":
		return "", errors.New("-api-token and -token-file both name the token; give one")
	case flagToken != "":
		return strings.TrimSpace(flagToken), nil
	case file == "":
		return strings.TrimSpace(envToken), nil
	}
	data, err := os.ReadFile(file)
	if err != nil {
		return "", fmt.Errorf("-token-file: %w", err)
	}
	token := strings.TrimSpace(string(data))
	if token == "" {
		return "", fmt.Errorf("-token-file %s is empty", file)
	}
	return token, nil
}

func defaultConfigDir() string {
	if dir, err := os.UserConfigDir(); err == nil {
		return filepath.Join(dir, "muster")
	}
	return "."
}

// checkListen keeps the API on loopback unless the operator says otherwise,
// and never exposes it without a token: -allow-remote alone would open the
// event streams and manual reconciles to the network.
func checkListen(addr string, allowRemote, haveToken bool) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("-listen %q: %w", addr, err)
	}
	notLoopback := nonLoopback(host)
	switch {
	case notLoopback == "":
		return nil
	case !allowRemote:
		return fmt.Errorf("-listen %q %s; pass -allow-remote (and an API token) to expose the API, or -health-listen to expose only probes and metrics", addr, notLoopback)
	case !haveToken:
		return fmt.Errorf("-listen %q %s and no API token is set: give one in $MUSTERD_TOKEN, -token-file or -api-token, or keep the API on loopback and serve probes and metrics with -health-listen", addr, notLoopback)
	}
	return nil
}

// checkMCPListen keeps the MCP listener from opening the servers' tools to
// the network without a token: -mcp-listen is the operator's explicit
// intent to expose the endpoint (like -health-listen for probes), so it
// needs no -allow-remote, but a non-loopback address needs a token.
func checkMCPListen(addr string, haveToken bool) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("-mcp-listen %q: %w", addr, err)
	}
	if why := nonLoopback(host); why != "" && !haveToken {
		return fmt.Errorf("-mcp-listen %q %s and no token is set: the MCP endpoint calls the servers' tools; give a token in $MUSTERD_TOKEN, -token-file or -api-token", addr, why)
	}
	return nil
}

// nonLoopback says why host is not a loopback address, or "" if it is. A
// name is trusted only if every address it resolves to is loopback:
// "localhost" can be mapped elsewhere.
func nonLoopback(host string) string {
	var ips []net.IP
	if ip := net.ParseIP(host); ip != nil {
		ips = []net.IP{ip}
	} else if host != "" {
		ips, _ = net.LookupIP(host)
	}
	if len(ips) == 0 {
		return "is not a loopback address"
	}
	for _, ip := range ips {
		if !ip.IsLoopback() {
			return fmt.Sprintf("resolves to %s, not a loopback address", ip)
		}
	}
	return ""
}

func runDaemon(args []string, stderr io.Writer) int {
	cfg, notes, err := parseDaemonFlags(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintln(stderr, "musterd:", err)
		return 2
	}
	log := newLogger(stderr, cfg)
	for _, note := range notes {
		log.Info(note)
	}
	stopProfiling, err := startDebugProfiling(log) // debugprof.go: off unless asked
	defer stopProfiling()
	if err != nil {
		log.Error("musterd stopped", "error", err)
		return 1
	}

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	if err := serve(ctx, cfg, log); err != nil {
		log.Error("musterd stopped", "error", err)
		return 1
	}
	log.Info("musterd stopped")
	return 0
}

func newLogger(w io.Writer, cfg daemonConfig) *slog.Logger {
	opts := &slog.HandlerOptions{Level: cfg.logLevel}
	if cfg.logFormat == "json" {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}

// daemon is musterd: the pipeline with the config dir's watcher and
// status files, or in Kubernetes mode the custom resources' watcher and
// status subresource, and the reconcilers.
type daemon struct {
	*pipeline.Pipeline
	Index      *resources.Index
	Catalogue  *catalogue.Catalogue
	Supervisor *supervisor.Supervisor
	Readiness  *statusync.Readiness
	History    *statusync.History
	// MusterEvents is muster's view of the events, for core_events.
	MusterEvents *musterevents.Log
	// Overrides are the operators' service requests; Controls serve them
	// and the other controls to the API and the core tools.
	Overrides *services.Overrides
	Controls  *controls.Controller
	// CoreTools are the core tools, read and write: the router's first
	// source.
	CoreTools *coretools.Provider
	// Ready is /readyz.
	Ready func() bool
	// lost receives the elector's ErrLostLeadership; nil outside
	// Kubernetes mode.
	lost <-chan error
	// leader is api.Options.Leader; nil without leader election.
	leader func() (string, bool)
	// Router is the one way in for a tool call: it lists and calls the
	// core tools, the running servers' tools and the workflows.
	Router *router.Router
	// MCP is the MCP endpoint, and MCPRefresh keeps its exposed set
	// current.
	MCP *mcpserve.Server
	// Logins are the users' logins to protected servers, which
	// core_auth_login drives (logins.go).
	Logins *logins
	// Exchanges trade the users' tokens for the servers that take another
	// provider's (exchange.go).
	Exchanges *exchanges
	// Inbound checks callers' tokens when aggregator.oauth.server is
	// enabled; nil otherwise (inbound.go).
	Inbound *inbound
	// SSO opens the users' own connections to the servers that forward
	// their tokens (sso.go).
	SSO        *sso
	MCPRefresh *mcpserve.Refresher
	// Workflows runs workflows: a source of the router's tools, whose
	// steps call tools through the router (workflows.go).
	Workflows *workflowrun.Engine
	// workflowVerdicts is the Workflow reconciler, whose recorded statuses
	// the engine reads without a copy.
	workflowVerdicts *workflow.Reconciler
}

// newDaemon builds the daemon; if record is not nil, every bus event is
// written to it as a trace.
func newDaemon(cfg daemonConfig, log *slog.Logger, record io.Writer) (*daemon, error) {
	d := &daemon{Index: resources.New()}
	b := bus.New(bus.Options{Logger: log})

	// The foundations outlive every stage: the recorder, if any, first, so
	// that it records the others' last events, then the supervisor's
	// stopper, so that no reconcile starts a server after it stopped them.
	var foundations []lifecycle.Component
	if record != nil {
		// Not critical: a full disk must not stop reconciliation.
		foundations = append(foundations, eventtrace.NewRecorder(b, record, traceHeader(cfg), eventtrace.RecorderOptions{Logger: log}))
	}
	// The runtime: the catalogue, the bridge publishing on the bus, the
	// supervisor reporting to the bridge, the reconcilers over both.
	// An empty prefix (muster's aggregator.musterPrefix: "", or
	// -tool-prefix "") is none: no "x_".
	d.Catalogue = catalogue.New(catalogue.Options{Prefix: cfg.toolPrefix, NoPrefix: cfg.toolPrefix == ""})
	bridge, err := supervised.New(b, supervised.Options{Index: d.Index, Catalogue: d.Catalogue, Logger: log})
	if err != nil {
		return nil, err
	}
	d.Supervisor = supervisor.New(supervisor.Options{Logger: log, OnChangeSync: bridge.OnChange, InheritEnv: cfg.inheritEnv,
		StartConcurrency: cfg.startConcurrency, StartTimeout: cfg.startTimeout, PingInterval: cfg.pingInterval, PingTimeout: cfg.pingTimeout,
		HTTPTransport: outboundTransport(cfg.extraCAs),
		// A user's own connection's tools, in that user's view alone.
		OnUserChange: bridge.OnUserChange})
	var (
		statusWriter statusync.StatusWriter
		kubeParts    *kubeStages
		elected      <-chan struct{}
	)
	if cfg.kube.enabled {
		if kubeParts, err = newKubeStages(cfg, d, b, log); err != nil {
			return nil, err
		}
		foundations = append(foundations, kubeParts.foundation()...)
		statusWriter, elected, d.lost, d.leader = kubeParts.writer, kubeParts.elected(), kubeParts.lost, kubeParts.leader()
	} else {
		if statusWriter, err = files.New(files.Options{
			StateDir: cfg.stateDir,
			// The store writes only once the pipeline runs, after New has set
			// d.Pipeline.
			ResourceStatus: func(k events.Key) (any, bool) { return d.Reconcilers.Status(k) },
		}); err != nil {
			return nil, err
		}
	}
	foundations = append(foundations, supervised.NewStopper(d.Supervisor, supervised.StopperOptions{}))
	if d.Overrides, err = newOverrides(cfg, kubeParts); err != nil {
		return nil, err
	}
	servers := mcpserver.New(d.Index, d.Supervisor, d.Catalogue)
	d.workflowVerdicts = workflow.New(d.Index, d.Catalogue, workflow.WithBuiltinTools(d.builtinTool))
	servers.SetOverrides(d.Overrides)
	servers.SetExposer(bridge)

	// Status writes wait for the first full reconcile (statushold.go).
	readyForStatusWrites := make(chan struct{})
	d.Pipeline, err = pipeline.New(pipeline.Options{
		Logger:      log,
		Bus:         b,
		Foundations: foundations,
		Reconcilers: []reconcilers.Reconciler{servers, d.workflowVerdicts},
		Debouncer:   debouncer.Options{Interval: cfg.debounce},
		Coordinator: coordinator.Options{Workers: cfg.workers, ResyncPeriod: cfg.resync, ReconcileTimeout: cfg.reconcileTimeout,
			BackoffBase: retryBackoffBase, BackoffMax: retryBackoffMax, Jitter: retryJitter, MaxRetries: retryMax,
			Hash: d.Index.Hash},
		Store:     statusync.StoreOptions{Writer: statusWriter, HoldWrites: readyForStatusWrites},
		Lifecycle: lifecycle.Options{StopTimeout: cfg.stopTimeout, Elected: elected},
	})
	if err != nil {
		return nil, err
	}
	// The process's own health (heap, GC, goroutines, resident memory, open
	// files) beside the stages', as controller-runtime's managers export
	// it: the daemon owns the process, a program embedding the pipeline
	// registers its own.
	d.Registry.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	if err := d.Add(bridge); err != nil {
		return nil, err
	}
	if kubeParts != nil {
		if err := kubeParts.add(d, cfg, log); err != nil {
			return nil, err
		}
	}
	var watcher lifecycle.Component
	if kubeParts != nil {
		watcher = kubeParts.watcher
	} else if watcher, err = fs.New(b, fs.Options{ConfigDir: cfg.configDir, Index: d.Index, RescanInterval: cfg.rescan, Logger: log}); err != nil {
		return nil, err
	}
	if err := d.Add(watcher, lifecycle.Critical()); err != nil {
		return nil, err
	}
	d.Readiness = statusync.NewReadiness(b)
	if err := d.Add(d.Readiness); err != nil {
		return nil, err
	}
	d.Ready = d.Readiness.Ready
	go holdStatusWrites(d.Readiness.Done(), statusWritesHold, readyForStatusWrites)
	if kubeParts != nil {
		d.Ready = kubeParts.ready(d.Readiness.Ready)
	}
	d.History = statusync.NewHistory(b, statusync.HistoryOptions{})
	if err := d.Add(d.History); err != nil {
		return nil, err
	}
	d.MusterEvents = musterevents.NewLog(b, musterevents.LogOptions{Translate: musterTranslation(d)})
	if err := d.Add(d.MusterEvents); err != nil {
		return nil, err
	}
	if d.Controls, err = newControls(cfg, d, log); err != nil {
		return nil, err
	}
	if err := d.addWorkflows(cfg, log); err != nil {
		return nil, err
	}
	d.SSO = newSSO(d, log)
	if d.Inbound, err = newInbound(d, cfg.oauth.Server, outboundTransport(cfg.extraCAs), log); err != nil {
		return nil, fmt.Errorf("aggregator.oauth.server: %w", err)
	}
	if d.Logins, err = newLogins(d, cfg.oauth, outboundTransport(cfg.extraCAs), log); err != nil {
		return nil, fmt.Errorf("aggregator.oauth.mcpClient: %w", err)
	}
	d.Exchanges = newExchanges(cfg.oauth.Server, outboundTransport(cfg.extraCAs), log)
	if kubeParts != nil {
		if d.Exchanges.secret, err = kubeSecrets(cfg.kube.rest); err != nil {
			return nil, err
		}
	}
	if d.CoreTools, err = newCoreTools(cfg, d, kubeParts, log); err != nil {
		return nil, err
	}
	if err := d.addMCP(cfg, log); err != nil {
		return nil, err
	}
	return d, nil
}

// traceHeader is the header of the daemon's trace: its version and
// effective configuration, starting now.
func traceHeader(cfg daemonConfig) eventtrace.Header {
	return eventtrace.Header{Musterd: version, Start: events.Now(), Config: eventtrace.Config{
		Debounce:         eventtrace.Duration(cfg.debounce),
		Workers:          cfg.workers,
		ReconcileTimeout: eventtrace.Duration(cfg.reconcileTimeout),
		BackoffBase:      eventtrace.Duration(retryBackoffBase),
		BackoffMax:       eventtrace.Duration(retryBackoffMax),
		Jitter:           retryJitter,
		MaxRetries:       retryMax,
		Resync:           eventtrace.Duration(cfg.resync),
	}}
}

// serve runs the daemon and its HTTP server until ctx is done or one of
// them fails.
func serve(ctx context.Context, cfg daemonConfig, log *slog.Logger) (err error) {
	var record io.Writer
	if cfg.record != "" {
		// Readable by its owner only: redacted, but it still says what runs.
		f, err := os.OpenFile(cfg.record, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
		if err != nil {
			return fmt.Errorf("-record: %w", err)
		}
		// An existing file keeps its mode through O_TRUNC.
		if err := f.Chmod(0o600); err != nil {
			f.Close()
			return fmt.Errorf("-record: %w", err)
		}
		defer func() {
			if cerr := f.Close(); cerr != nil {
				err = errors.Join(err, fmt.Errorf("-record: %w", cerr))
			}
		}()
		record = f
	}
	if cfg.kube.enabled {
		if err := cfg.kube.connect(ctx, log); err != nil {
			return err
		}
	}
	d, err := newDaemon(cfg, log, record)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", cfg.listen)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", cfg.listen, err)
	}
	apiHandler, err := api.NewHandler(api.Options{
		Index: d.Index, Statuses: d.Store, ResourceStatus: d.Reconcilers.Status,
		Trigger: func(k events.Key) { d.Coordinator.Trigger(k) }, Leader: d.leader, Bus: d.Bus,
		Metrics: d.Registry, Health: d.Components.Health, Ready: d.Ready, History: d.History,
		Controls: d.Controls, Executions: d.Workflows, Token: cfg.token, Logger: log, Calls: d.callsOf,
		Authenticator: d.callers(cfg.token),
		Process: func(k events.Key) (int, bool) {
			o, ok := d.Supervisor.Get(k)
			return o.PID, ok
		},
	})
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: d.mux(apiHandler), ReadHeaderTimeout: 5 * time.Second}
	servers := []*http.Server{srv}
	listeners := []net.Listener{ln}
	healthAddr := ""
	if cfg.healthListen != "" {
		probeLn, err := net.Listen("tcp", cfg.healthListen)
		if err != nil {
			ln.Close()
			return fmt.Errorf("-health-listen on %s: %w", cfg.healthListen, err)
		}
		probes, err := api.NewProbeHandler(api.ProbeOptions{Metrics: d.Registry, Health: d.Components.Health, Ready: d.Ready})
		if err != nil {
			ln.Close()
			probeLn.Close()
			return err
		}
		servers = append(servers, &http.Server{Handler: probes, ReadHeaderTimeout: 5 * time.Second})
		listeners = append(listeners, probeLn)
		healthAddr = probeLn.Addr().String()
	}
	mcpAddr := ""
	if cfg.mcpListen != "" {
		mcpLn, err := net.Listen("tcp", cfg.mcpListen)
		if err != nil {
			for _, l := range listeners {
				l.Close()
			}
			return fmt.Errorf("-mcp-listen on %s: %w", cfg.mcpListen, err)
		}
		servers = append(servers, &http.Server{Handler: d.mcpOnly(), ReadHeaderTimeout: 5 * time.Second})
		listeners = append(listeners, mcpLn)
		mcpAddr = mcpLn.Addr().String()
	}
	log.Info("musterd starting", "version", version, "config_dir", cfg.configDir, "state_dir", cfg.stateDir,
		"listen", ln.Addr().String(), "health_listen", healthAddr, "mcp_listen", mcpAddr, "debounce", cfg.debounce, "workers", cfg.workers, "resync", cfg.resync,
		"api_token", cfg.token != "", "record", cfg.record, "kubernetes", cfg.kube.enabled,
		"namespace", cfg.kube.namespace, "leader_elect", cfg.kube.leaderElect)
	log.Info("live page", "url", "http://"+ln.Addr().String()+ui.Prefix)

	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	serveErrs := make(chan error, len(servers))
	for i, srv := range servers {
		go func() {
			err := srv.Serve(listeners[i])
			if errors.Is(err, http.ErrServerClosed) {
				err = nil
			}
			if err != nil {
				cancel(err)
			}
			serveErrs <- err
		}()
	}
	go func() {
		// Losing the lease stops everything this replica runs, servers
		// included, and exits non-zero, for the kubelet to restart it as
		// a follower: controller-runtime's convention.
		select {
		case err := <-d.lost:
			cancel(err)
		case <-ctx.Done():
		}
	}()

	go releaseAfterStart(ctx, d.Ready, func() bool { // release.go
		quiet, _ := d.Store.Quiescent(time.Now())
		return d.Ready() && quiet
	}, func(what string) { releaseAndLog(log, what) })
	runErr := d.Run(ctx)
	if cause := context.Cause(ctx); errors.Is(cause, election.ErrLostLeadership) {
		runErr = errors.Join(runErr, cause)
	}
	shutdownCtx, done := context.WithTimeout(context.Background(), 5*time.Second)
	defer done()
	errs := []error{runErr}
	for _, srv := range servers {
		_ = srv.Shutdown(shutdownCtx)
	}
	for range servers {
		errs = append(errs, <-serveErrs)
	}
	return errors.Join(errs...)
}
