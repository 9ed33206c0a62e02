package main

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	oauthconfig "github.com/musterd/musterd/pkg/oauth/config"
)

// configFile is what musterd reads from <config-dir>/config.yaml. Each key
// is the camelCase spelling of a musterd run flag. Muster keeps its own
// settings in the same file, so keys musterd does not use are left alone
// (and named once in the log), not rejected.
type configFile struct {
	StateDir         *string   `yaml:"stateDir"`
	Listen           *string   `yaml:"listen"`
	HealthListen     *string   `yaml:"healthListen"`
	MCPListen        *string   `yaml:"mcpListen"`
	LogLevel         *string   `yaml:"logLevel"`
	LogFormat        *string   `yaml:"logFormat"`
	Debounce         *duration `yaml:"debounce"`
	Workers          *int      `yaml:"workers"`
	ReconcileTimeout *duration `yaml:"reconcileTimeout"`
	Resync           *duration `yaml:"resync"`
	Rescan           *duration `yaml:"rescan"`
	StopTimeout      *duration `yaml:"stopTimeout"`
	TokenFile        *string   `yaml:"tokenFile"`
	ToolPrefix       *string   `yaml:"toolPrefix"`
	Record           *string   `yaml:"record"`
	StartConcurrency *int      `yaml:"startConcurrency"`
	StartTimeout     *duration `yaml:"startTimeout"`
	PingInterval     *duration `yaml:"pingInterval"`
	PingTimeout      *duration `yaml:"pingTimeout"`
	// DisabledKinds are the kinds not reconciled at start (-disable-kinds).
	DisabledKinds *[]string `yaml:"disabledKinds"`
	// Kubernetes mode.
	Kubernetes                  *bool     `yaml:"kubernetes"`
	Namespace                   *string   `yaml:"namespace"`
	Kubeconfig                  *string   `yaml:"kubeconfig"`
	KubeConnectTimeout          *duration `yaml:"kubeConnectTimeout"`
	LeaderElect                 *bool     `yaml:"leaderElect"`
	LeaderElectionID            *string   `yaml:"leaderElectionID"`
	LeaderElectionNamespace     *string   `yaml:"leaderElectionNamespace"`
	LeaderElectionLeaseDuration *duration `yaml:"leaderElectionLeaseDuration"`
	LeaderElectionRenewDeadline *duration `yaml:"leaderElectionRenewDeadline"`
	LeaderElectionRetryPeriod   *duration `yaml:"leaderElectionRetryPeriod"`
	// Aggregator holds muster's own keys for `muster serve`'s endpoint,
	// honoured so that musterd answers where muster did.
	Aggregator *aggregatorConfig `yaml:"aggregator"`
}

// aggregatorConfig is muster's aggregator section. Its other keys
// (transport, enabled, admin…) mean nothing to musterd, which serves both
// transports at once.
type aggregatorConfig struct {
	// Host and Port set the listen address when neither -listen nor the
	// listen key does: muster's default localhost:8090 is musterd's too.
	Host *string `yaml:"host"`
	Port *int    `yaml:"port"`
	// MusterPrefix is the global prefix of exposed tool names, unless
	// -tool-prefix or the toolPrefix key sets it; "" for none (muster
	// reads "" as its default "x").
	MusterPrefix *string `yaml:"musterPrefix"`
	// OAuth is muster's OAuth section, read whole and checked by package
	// oauth/config: unlike the rest of the file, an unknown key in it is
	// an error, since a typo there must not quietly weaken security. (A
	// yaml.Node, not a pointer: yaml.v3 fills only the former; its Kind is
	// 0 when the key is absent.)
	OAuth yaml.Node `yaml:"oauth"`
}

// duration reads "100ms", "10m" and the like.
type duration time.Duration

func (d *duration) UnmarshalYAML(n *yaml.Node) error {
	v, err := time.ParseDuration(n.Value)
	if err != nil {
		return fmt.Errorf("line %d: %q is not a duration such as 100ms or 10m", n.Line, n.Value)
	}
	*d = duration(v)
	return nil
}

// applyConfigFile sets what path says on cfg, except what the command line
// set. A missing file is fine; a malformed one is an error naming it.
func applyConfigFile(cfg *daemonConfig, path string, setOnCommandLine map[string]bool) (notes []string, err error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("config file: %w", err)
	}
	var raw map[string]yaml.Node
	if err := yaml.Unmarshal(data, &raw); err != nil {
		return nil, fmt.Errorf("config file %s: %w", path, err)
	}
	var file configFile
	if err := yaml.Unmarshal(data, &file); err != nil {
		return nil, fmt.Errorf("config file %s: %w", path, err)
	}
	known := map[string]bool{}
	for _, k := range []string{"stateDir", "listen", "healthListen", "mcpListen", "logLevel", "logFormat", "debounce", "workers", "reconcileTimeout", "resync", "rescan", "stopTimeout", "tokenFile", "toolPrefix", "record", "disabledKinds",
		"startConcurrency", "startTimeout", "pingInterval", "pingTimeout",
		"kubernetes", "namespace", "kubeconfig", "kubeConnectTimeout", "leaderElect", "leaderElectionID", "leaderElectionNamespace",
		"leaderElectionLeaseDuration", "leaderElectionRenewDeadline", "leaderElectionRetryPeriod", "aggregator"} {
		known[k] = true
	}
	var ignored []string
	for k := range raw {
		if !known[k] {
			ignored = append(ignored, k)
		}
	}
	if len(ignored) > 0 {
		slices.Sort(ignored)
		notes = append(notes, fmt.Sprintf("config.yaml: ignoring keys musterd does not use: %s", strings.Join(ignored, ", ")))
	}

	setString := func(flag string, v *string, dst *string) {
		if v != nil && !setOnCommandLine[flag] {
			*dst = *v
		}
	}
	setDuration := func(flag string, v *duration, dst *time.Duration) {
		if v != nil && !setOnCommandLine[flag] {
			*dst = time.Duration(*v)
		}
	}
	setString("state-dir", file.StateDir, &cfg.stateDir)
	setString("listen", file.Listen, &cfg.listen)
	setString("health-listen", file.HealthListen, &cfg.healthListen)
	setString("mcp-listen", file.MCPListen, &cfg.mcpListen)
	setString("log-format", file.LogFormat, &cfg.logFormat)
	setString("token-file", file.TokenFile, &cfg.tokenFile)
	setString("tool-prefix", file.ToolPrefix, &cfg.toolPrefix)
	setString("record", file.Record, &cfg.record)
	setDuration("debounce", file.Debounce, &cfg.debounce)
	setDuration("resync", file.Resync, &cfg.resync)
	setDuration("reconcile-timeout", file.ReconcileTimeout, &cfg.reconcileTimeout)
	setDuration("rescan", file.Rescan, &cfg.rescan)
	setDuration("stop-timeout", file.StopTimeout, &cfg.stopTimeout)
	setBool := func(flag string, v *bool, dst *bool) {
		if v != nil && !setOnCommandLine[flag] {
			*dst = *v
		}
	}
	setBool("kubernetes", file.Kubernetes, &cfg.kube.enabled)
	setString("namespace", file.Namespace, &cfg.kube.namespace)
	setString("kubeconfig", file.Kubeconfig, &cfg.kube.kubeconfig)
	setDuration("kube-connect-timeout", file.KubeConnectTimeout, &cfg.kube.connectTimeout)
	setBool("leader-elect", file.LeaderElect, &cfg.kube.leaderElect)
	setString("leader-election-id", file.LeaderElectionID, &cfg.kube.leaderElectionID)
	setString("leader-election-namespace", file.LeaderElectionNamespace, &cfg.kube.leaderElectionNamespace)
	setDuration("leader-election-lease-duration", file.LeaderElectionLeaseDuration, &cfg.kube.leaseDuration)
	setDuration("leader-election-renew-deadline", file.LeaderElectionRenewDeadline, &cfg.kube.renewDeadline)
	setDuration("leader-election-retry-period", file.LeaderElectionRetryPeriod, &cfg.kube.retryPeriod)
	if file.DisabledKinds != nil && !setOnCommandLine["disable-kinds"] {
		kinds, err := parseKinds(*file.DisabledKinds)
		if err != nil {
			return nil, fmt.Errorf("config file %s: disabledKinds: %w", path, err)
		}
		cfg.disabledKinds = kinds
	}
	if a := file.Aggregator; a != nil {
		if file.Listen == nil && !setOnCommandLine["listen"] && (a.Host != nil || a.Port != nil) {
			host, port, err := net.SplitHostPort(cfg.listen)
			if err != nil {
				return nil, fmt.Errorf("config file %s: aggregator: the default listen address %q: %w", path, cfg.listen, err)
			}
			if a.Host != nil {
				host = *a.Host
			}
			if a.Port != nil {
				if *a.Port < 0 || *a.Port > 65535 {
					return nil, fmt.Errorf("config file %s: aggregator.port %d is not a TCP port (0-65535)", path, *a.Port)
				}
				port = strconv.Itoa(*a.Port)
			}
			cfg.listen = net.JoinHostPort(host, port)
			notes = append(notes, fmt.Sprintf("config.yaml: listening on aggregator.host/port %s, where muster serve would", cfg.listen))
		}
		if a.MusterPrefix != nil && file.ToolPrefix == nil && !setOnCommandLine["tool-prefix"] {
			cfg.toolPrefix = *a.MusterPrefix
		}
	}
	var oauthNode *yaml.Node
	if file.Aggregator != nil && file.Aggregator.OAuth.Kind != 0 {
		oauthNode = &file.Aggregator.OAuth
	}
	oauth, err := oauthconfig.Load(oauthNode, oauthconfig.Options{})
	if err != nil {
		return nil, fmt.Errorf("config file %s: %w", path, err)
	}
	cfg.oauth = oauth
	notes = append(notes, oauthNotes(oauth)...)
	if file.Workers != nil && !setOnCommandLine["workers"] {
		cfg.workers = *file.Workers
	}
	if file.StartConcurrency != nil && !setOnCommandLine["start-concurrency"] {
		cfg.startConcurrency = *file.StartConcurrency
	}
	setDuration("start-timeout", file.StartTimeout, &cfg.startTimeout)
	setDuration("ping-interval", file.PingInterval, &cfg.pingInterval)
	setDuration("ping-timeout", file.PingTimeout, &cfg.pingTimeout)
	if file.LogLevel != nil && !setOnCommandLine["log-level"] {
		var level slog.Level
		if err := level.UnmarshalText([]byte(*file.LogLevel)); err != nil {
			return nil, fmt.Errorf("config file %s: logLevel: %w", path, err)
		}
		cfg.logLevel = level
	}
	return notes, nil
}

// oauthNotes tells the operator what of the OAuth roles config.yaml turns
// on musterd does not play yet. (It checks callers' tokens: inbound.go;
// it signs users in to protected servers: logins.go.)
func oauthNotes(c oauthconfig.Config) []string {
	var notes []string
	if c.Server.Enabled {
		// Said, not quietly dropped: these would narrow what is let in.
		for i, ti := range c.Server.TrustedIssuers {
			if len(ti.AllowedScopes) > 0 {
				notes = append(notes, fmt.Sprintf("config.yaml: aggregator.oauth.server.trustedIssuers[%d].allowedScopes is not enforced by musterd yet: it mints no tokens whose scopes it would cap", i))
			}
		}
		notes = append(notes, "config.yaml: musterd fetches the keys and discovery documents of its issuers at any address, private ones included: allowPrivateIPJWKS, allowPrivateIPJWKSHosts and dex.allowPrivateIPOIDC have no effect yet")
	}
	return notes
}
