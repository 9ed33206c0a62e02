package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Label of the pod that serves MCP: config/mcp's Service selects the pod
// whose value is mcpRoleLeader, so MCP traffic reaches the leader alone,
// the only replica that runs servers.
const (
	mcpRoleLabel    = "musterd.giantswarm.io/mcp"
	mcpRoleLeader   = "leader"
	mcpRoleFollower = "follower"
)

// mcpRole is the component that labels this replica's pod with its MCP
// role: follower from the start (a pod keeps its labels across restarts,
// so a leader that lost the Lease and came back as a follower must drop
// its role first), leader once it leads and its first full reconcile is
// done (its servers run: clients that reconnect after a failover see its
// tools), follower again as it stops. A label that cannot be written is
// retried, with backoff, until it is.
type mcpRole struct {
	c         client.Client
	pod       types.NamespacedName
	elected   <-chan struct{} // nil: this replica always leads
	ready     func() bool
	log       *slog.Logger
	readyPoll time.Duration
}

// newMCPRole returns the component for the pod namespace/name.
func newMCPRole(k kubeConfig, namespace, name string, elected <-chan struct{}, ready func() bool, log *slog.Logger) (*mcpRole, error) {
	scheme := runtime.NewScheme()
	if err := corev1.AddToScheme(scheme); err != nil {
		return nil, err
	}
	c, err := client.New(k.rest, client.Options{Scheme: scheme})
	if err != nil {
		return nil, fmt.Errorf("kubernetes mode: %w", err)
	}
	return &mcpRole{c: c, pod: types.NamespacedName{Namespace: namespace, Name: name}, elected: elected, ready: ready,
		log: log.With("component", "mcp-role", "pod", namespace+"/"+name), readyPoll: 200 * time.Millisecond}, nil
}

func (r *mcpRole) Name() string { return "mcp-role" }

func (r *mcpRole) Start(ctx context.Context) error {
	if !r.set(ctx, mcpRoleFollower) {
		return nil
	}
	select {
	case <-r.elected:
	case <-ctx.Done():
		return nil
	}
	tick := time.NewTicker(r.readyPoll)
	defer tick.Stop()
	for !r.ready() {
		select {
		case <-tick.C:
		case <-ctx.Done():
			return nil
		}
	}
	if !r.set(ctx, mcpRoleLeader) {
		return nil
	}
	<-ctx.Done()
	// Stopping: the leader gives the role up at once rather than leave the
	// Service routing to a replica that is going away. Best effort: a
	// replica that dies without it has its readiness fail, and clears the
	// label itself when it comes back.
	stopCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 3*time.Second)
	defer cancel()
	if err := r.patch(stopCtx, mcpRoleFollower); err != nil {
		r.log.Warn("could not give the MCP role up on the way out", "error", err)
	}
	return nil
}

// set labels the pod with role, retrying until it succeeds or ctx is
// done; it reports whether it succeeded.
func (r *mcpRole) set(ctx context.Context, role string) bool {
	backoff := 250 * time.Millisecond
	for attempt := 1; ; attempt++ {
		err := r.patch(ctx, role)
		if err == nil {
			r.log.Info("pod labelled with its MCP role", "label", mcpRoleLabel, "role", role)
			return true
		}
		if ctx.Err() != nil {
			return false
		}
		r.log.Warn("could not label the pod with its MCP role; retrying", "role", role, "attempt", attempt, "error", err)
		select {
		case <-ctx.Done():
			return false
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 10*time.Second)
	}
}

func (r *mcpRole) patch(ctx context.Context, role string) error {
	data, err := json.Marshal(map[string]any{"metadata": map[string]any{"labels": map[string]string{mcpRoleLabel: role}}})
	if err != nil {
		return err
	}
	pod := &corev1.Pod{}
	pod.Namespace, pod.Name = r.pod.Namespace, r.pod.Name
	if err := r.c.Patch(ctx, pod, client.RawPatch(types.MergePatchType, data)); err != nil {
		return fmt.Errorf("patch pod %s: %w", r.pod, err)
	}
	return nil
}

// errNoPodName says why the MCP role cannot be kept.
var errNoPodName = errors.New("-mcp-listen in Kubernetes mode with -leader-elect needs the pod's name, to route MCP to the leader: set $POD_NAME from the downward API (metadata.name) or pass -pod-name")
