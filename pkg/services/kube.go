package services

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/musterd/musterd/pkg/apis/muster/v1alpha1"
	"github.com/musterd/musterd/pkg/events"
)

// CRStatus persists the records in Kubernetes mode, in each MCPServer's
// status.override: Load reads them from the listed MCPServers, Save
// merge-patches the status subresource of each one whose record changed.
// The reconciler puts the same override into the status it reports, so the
// status writer's later writes of the whole status keep it.
type CRStatus struct {
	// Client reaches the API server. Required.
	Client client.Client
	// Namespace is the one musterd watches; "" for every namespace.
	Namespace string
	// Timeout bounds each call. Default 10s.
	Timeout time.Duration

	mu    sync.Mutex
	saved map[events.Key]Record
}

func (p *CRStatus) ctx() (context.Context, context.CancelFunc) {
	d := p.Timeout
	if d <= 0 {
		d = 10 * time.Second
	}
	return context.WithTimeout(context.Background(), d)
}

// Load lists the MCPServers and returns their overrides.
func (p *CRStatus) Load() ([]Record, error) {
	ctx, cancel := p.ctx()
	defer cancel()
	var list v1alpha1.MCPServerList
	var opts []client.ListOption
	if p.Namespace != "" {
		opts = append(opts, client.InNamespace(p.Namespace))
	}
	if err := p.Client.List(ctx, &list, opts...); err != nil {
		return nil, fmt.Errorf("list MCPServers: %w", err)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.saved = map[events.Key]Record{}
	var out []Record
	for _, s := range list.Items {
		if s.Status == nil {
			continue
		}
		key := events.NewKey(v1alpha1.KindMCPServer, s.Namespace, s.Name)
		if r, ok := RecordOf(key, s.Status.Override); ok {
			out = append(out, r)
			p.saved[key] = r
		}
	}
	return out, nil
}

// Save patches status.override of every MCPServer whose record was made,
// changed or dropped since the last Save. A server that is gone needs no
// patch.
func (p *CRStatus) Save(records []Record) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.saved == nil {
		p.saved = map[events.Key]Record{}
	}
	want := map[events.Key]Record{}
	for _, r := range records {
		want[r.Key.Canonical()] = r
	}
	ctx, cancel := p.ctx()
	defer cancel()
	patch := func(key events.Key, r *Record) error {
		var override any // null drops the field
		if r != nil {
			override = r.status()
		}
		data, err := json.Marshal(map[string]any{"status": map[string]any{"override": override}})
		if err != nil {
			return err
		}
		obj := &v1alpha1.MCPServer{}
		obj.Namespace, obj.Name = key.Namespace, key.Name
		err = p.Client.Status().Patch(ctx, obj, client.RawPatch("application/merge-patch+json", data))
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("patch the status of MCPServer %s/%s: %w", key.Namespace, key.Name, err)
		}
		return nil
	}
	for key, r := range want {
		if old, ok := p.saved[key]; ok && old == r {
			continue
		}
		if err := patch(key, &r); err != nil {
			return err
		}
		p.saved[key] = r
	}
	for key := range p.saved {
		if _, ok := want[key]; ok {
			continue
		}
		if err := patch(key, nil); err != nil {
			return err
		}
		delete(p.saved, key)
	}
	return nil
}
