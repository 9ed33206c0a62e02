package main

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"

	dto "github.com/prometheus/client_model/go"

	"github.com/musterd/musterd/pkg/api/types"
	"github.com/musterd/musterd/pkg/apis/muster/v1alpha1"
	"github.com/musterd/musterd/pkg/controls"
	"github.com/musterd/musterd/pkg/coretools"
	"github.com/musterd/musterd/pkg/declare"
	"github.com/musterd/musterd/pkg/events"
	"github.com/musterd/musterd/pkg/services"
)

// overridesFile is where filesystem mode keeps the operators' service
// requests, under the state directory.
const overridesFile = "overrides/mcpservers.json"

// newOverrides loads the operators' service requests: from the state
// directory in filesystem mode, from the MCPServers' status.override in
// Kubernetes mode.
func newOverrides(cfg daemonConfig, kubeParts *kubeStages) (*services.Overrides, error) {
	if kubeParts != nil {
		return services.New(&services.CRStatus{Client: kubeParts.client, Namespace: cfg.kube.namespace, Timeout: cfg.kube.connectTimeout})
	}
	return services.New(services.File{Path: filepath.Join(cfg.stateDir, overridesFile)})
}

// newControls wires the operators' controls to the daemon's stages, and
// disables the kinds the configuration names.
func newControls(cfg daemonConfig, d *daemon, log *slog.Logger) (*controls.Controller, error) {
	mode := "filesystem"
	if cfg.kube.enabled {
		mode = "kubernetes"
	}
	c, err := controls.New(controls.Options{
		Bus: d.Bus, Index: d.Index, Overrides: d.Overrides, Coordinator: d.Coordinator,
		Kinds: d.Reconcilers.Kinds(),
		List: func(ctx context.Context, kind string) ([]events.Key, error) {
			r, ok := d.Reconcilers.Get(kind)
			if !ok {
				return nil, fmt.Errorf("no reconciler for %s", kind)
			}
			return r.List(ctx)
		},
		Statuses: d.Store,
		ServerStatus: func(key events.Key) (v1alpha1.MCPServerStatus, bool) {
			st, ok := d.Reconcilers.Status(key)
			s, _ := st.(v1alpha1.MCPServerStatus)
			return s, ok
		},
		Mode:       mode,
		Leader:     d.leader,
		QueueDepth: func() int { return queueDepth(d) },
		ToolCount:  func() int { return len(d.Catalogue.Tools()) },
		ServerTools: func(key events.Key) (controls.ToolCounts, bool) {
			exposed, offered, running := d.Catalogue.Offer(key)
			return controls.ToolCounts{Offered: offered, Exposed: len(exposed)}, running
		},
		Logger: log,
	})
	if err != nil {
		return nil, err
	}
	for _, kind := range cfg.disabledKinds {
		if err := d.Coordinator.SetKindEnabled(kind, false); err != nil {
			return nil, err
		}
		d.Store.SetKindDisabled(kind, true)
		log.Info("reconciliation disabled at start", "kind", kind)
	}
	return c, nil
}

// newCoreTools makes the core tools' provider over the definitions'
// store of the mode: the config dir's files, or the custom resources.
func newCoreTools(cfg daemonConfig, d *daemon, kubeParts *kubeStages, log *slog.Logger) (*coretools.Provider, error) {
	var (
		store     declare.Store
		err       error
		namespace = events.DefaultNamespace
	)
	if kubeParts != nil {
		namespace = cmp.Or(cfg.kube.namespace, namespace)
		store, err = declare.NewKube(declare.KubeOptions{Client: kubeParts.client})
	} else {
		store, err = declare.NewFiles(declare.FilesOptions{ConfigDir: cfg.configDir, Declared: func(key events.Key) ([]string, bool) {
			e, ok := d.Index.Get(key)
			return e.Files, ok
		}})
	}
	if err != nil {
		return nil, err
	}
	return coretools.New(coretools.Options{Store: store, Index: d.Index, Statuses: d.Store, Controls: d.Controls,
		Namespace: namespace, WaitTimeout: cfg.reconcileTimeout, Logger: log,
		Publish:        func(e events.Event) { d.Bus.Publish(e) },
		ResourceStatus: d.Reconcilers.Status,
		// Availability is judged at each call, as muster does, by the
		// Workflow reconciler's own walk of what a workflow needs: its
		// recorded verdict follows through the pipeline.
		WorkflowAvailability: func(k events.Key) (bool, []string, bool) {
			a, found := d.workflowVerdicts.Availability(k)
			return a.Available, a.MissingTools, found
		},
		ServerTools: func(k events.Key) []string {
			obs, ok := d.Supervisor.Get(k)
			if !ok {
				return nil
			}
			return obs.Tools
		},
		// core_reconcile_status with no name shows the controls'
		// overview, the one GET /api/v1/overview answers.
		Overview: d.Controls.Overview,
		ToolCounts: func(key events.Key) (controls.ToolCounts, bool) {
			exposed, offered, running := d.Catalogue.Offer(key)
			return controls.ToolCounts{Offered: offered, Exposed: len(exposed)}, running
		},
		Events:     d.MusterEvents,
		Config:     func() any { return musterConfig(cfg) },
		Kubernetes: cfg.kube.enabled,
		Executions: d.Workflows,
		Logins:     d.Logins,
	})
}

// queueDepth reads the coordinator's workqueue depth from its gauge.
func queueDepth(d *daemon) int {
	families, err := d.Registry.Gather()
	if err != nil {
		return 0
	}
	for _, f := range families {
		if f.GetName() != "musterd_workqueue_depth" {
			continue
		}
		for _, m := range f.GetMetric() {
			if labelIs(m, "name", "coordinator") {
				return int(m.GetGauge().GetValue())
			}
		}
	}
	return 0
}

func labelIs(m *dto.Metric, name, value string) bool {
	for _, l := range m.GetLabel() {
		if l.GetName() == name && l.GetValue() == value {
			return true
		}
	}
	return false
}

// parseKinds resolves kind names and aliases (mcpservers, wf, …) to the
// kinds' names, without duplicates.
func parseKinds(list []string) ([]string, error) {
	var kinds []string
	for _, s := range list {
		s = strings.TrimSpace(s)
		if s == "" {
			continue
		}
		k, err := types.ResolveKind(s)
		if err != nil {
			return nil, err
		}
		if !slices.Contains(kinds, k.Name) {
			kinds = append(kinds, k.Name)
		}
	}
	return kinds, nil
}
