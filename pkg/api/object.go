package api

import (
	"encoding/json"
	"fmt"
	"maps"
	"time"

	"github.com/musterd/musterd/pkg/api/types"
	"github.com/musterd/musterd/pkg/apis/muster/v1alpha1"
	"github.com/musterd/musterd/pkg/redact"
	"github.com/musterd/musterd/pkg/resources"
	"github.com/musterd/musterd/pkg/statusync"
)

// redacted replaces each secret value shown.
const redacted = "[redacted]"

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
		spec = RedactMCPServer(obj.Spec)
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
	o.Reconcile = ReconcileOf(s.opts.Statuses.Get(e.Key))
	o.Reconcile.Note = s.kindNote(e.Key)
	if o.Reconcile.LastError == "" && e.Err != nil {
		// Not reconciled since its file went wrong: show what is wrong.
		o.Reconcile.LastError = redact.String(e.Err.Error())
	}
	return o, nil
}

// ReconcileOf shows st, as the API and the MCP endpoint's
// core_reconcile_status do; a resource the store has not seen yet (found
// false) is Pending.
func ReconcileOf(st statusync.Status, found bool) types.Reconcile {
	if !found {
		return types.Reconcile{State: string(statusync.StatePending)}
	}
	return types.Reconcile{
		State:             string(st.State),
		LastReconcileTime: timeOrNil(st.LastReconcileTime),
		LastError:         st.LastError, // redacted by the store
		RetryCount:        st.RetryCount,
		NextRetry:         timeOrNil(st.NextRetry),
		CorrelationID:     st.CorrelationID,
		ObservedHash:      st.ObservedHash,
	}
}

// RedactMCPServer hides the values of spec's env and headers, which hold
// API keys and tokens, credentials in its URL, and secrets in its args
// (redact.Argv: "--token=X", the value after "--api-key"): what every client of
// musterd (the API, the MCP endpoint's core tools) is shown of a spec.
func RedactMCPServer(spec v1alpha1.MCPServerSpec) v1alpha1.MCPServerSpec {
	hide := func(m map[string]string) map[string]string {
		if m == nil {
			return nil
		}
		out := maps.Clone(m)
		for k := range out {
			out[k] = redacted
		}
		return out
	}
	spec.Env, spec.Headers = hide(spec.Env), hide(spec.Headers)
	spec.URL = redact.String(spec.URL)
	spec.Args = redact.Argv(spec.Args) // --token=X, --api-key X
	return spec
}

func timeOrNil(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}
