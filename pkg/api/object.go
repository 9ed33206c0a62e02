package api

import (
	"encoding/json"
	"fmt"

	"github.com/musterd/musterd/pkg/api/shared"
	"github.com/musterd/musterd/pkg/api/types"
	"github.com/musterd/musterd/pkg/apis/muster/v1alpha1"
	"github.com/musterd/musterd/pkg/redact"
	"github.com/musterd/musterd/pkg/resources"
)

// object shows the index entry e with its status and reconcile state.
func (s *server) object(e resources.Entry) (types.Object, error) {
	o := types.Object{
		APIVersion: v1alpha1.APIVersion,
		Kind:       e.Key.Kind,
		Metadata:   types.ObjectMeta{Name: e.Key.Name, Namespace: e.Key.Namespace, Hash: e.Hash},
		Files:      e.Files,
	}
	var spec any
	switch obj := e.Object.(type) {
	case *v1alpha1.MCPServer:
		o.Metadata.Labels, o.Metadata.Annotations, o.Metadata.Generation = obj.Labels, obj.Annotations, obj.Generation
		spec = shared.RedactMCPServer(obj.Spec)
	case *v1alpha1.Workflow:
		o.Metadata.Labels, o.Metadata.Annotations, o.Metadata.Generation = obj.Labels, obj.Annotations, obj.Generation
		spec = obj.Spec
	}
	var err error
	if spec != nil {
		if o.Spec, err = json.Marshal(spec); err != nil {
			return types.Object{}, fmt.Errorf("%s: encode spec: %w", e.Key, err)
		}
	}
	if s.opts.ResourceStatus != nil {
		if status, ok := s.opts.ResourceStatus(e.Key); ok && status != nil {
			if o.Status, err = json.Marshal(status); err != nil {
				return types.Object{}, fmt.Errorf("%s: encode status: %w", e.Key, err)
			}
		}
	}
	if s.opts.Process != nil && e.Key.Kind == v1alpha1.KindMCPServer {
		if pid, ok := s.opts.Process(e.Key); ok && pid > 0 {
			o.Process = &types.Process{PID: pid}
		}
	}
	if s.opts.Calls != nil && e.Key.Kind == v1alpha1.KindMCPServer {
		c := s.opts.Calls(e.Key)
		c.TotalCalls, c.TotalErrors = 0, 0
		for i := range c.Calls {
			c.TotalCalls += c.Calls[i]
		}
		for i := range c.Errors {
			c.TotalErrors += c.Errors[i]
		}
		if c.TotalCalls > 0 {
			o.Calls = &c
		}
	}
	o.Reconcile = shared.ReconcileOf(s.opts.Statuses.Get(e.Key))
	o.Reconcile.Note = s.kindNote(e.Key)
	if o.Reconcile.LastError == "" && e.Err != nil {
		// Not reconciled since its file went wrong: show what is wrong.
		o.Reconcile.LastError = redact.String(e.Err.Error())
	}
	return o, nil
}
