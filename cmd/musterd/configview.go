package main

import (
	"net"
	"strconv"

	oauthconfig "github.com/musterd/musterd/pkg/oauth/config"
)

// musterConfigView is what core_config_get answers: muster's MusterConfig
// as muster encodes it (Go's field names: it has no JSON tags), holding
// the values in force: the listen address as the aggregator's host and
// port, the tool prefix, the OAuth section as read (its secrets shown as
// <redacted>, where muster shows them), Kubernetes mode and its
// namespace. muster's admin section is left out: musterd has none.
type musterConfigView struct {
	Aggregator struct {
		Port         int
		Host         string
		Transport    string
		MusterPrefix string
		OAuth        oauthconfig.Config
	}
	Namespace  string
	Kubernetes bool
}

func musterConfig(cfg daemonConfig) musterConfigView {
	var v musterConfigView
	host, port, err := net.SplitHostPort(cfg.listen)
	if err == nil {
		v.Aggregator.Host = host
		v.Aggregator.Port, _ = strconv.Atoi(port)
	}
	// musterd serves both of muster's transports at once; streamable-http
	// is muster's default.
	v.Aggregator.Transport = "streamable-http"
	v.Aggregator.MusterPrefix = cfg.toolPrefix
	v.Aggregator.OAuth = cfg.oauth
	v.Kubernetes = cfg.kube.enabled
	v.Namespace = cfg.kube.namespace
	return v
}
