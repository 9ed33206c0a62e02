package shared

import (
	"maps"
	"time"

	"github.com/musterd/musterd/pkg/api/types"
	"github.com/musterd/musterd/pkg/apis/muster/v1alpha1"
	"github.com/musterd/musterd/pkg/redact"
	"github.com/musterd/musterd/pkg/statusync"
)

// redacted replaces each secret value shown.
const redacted = "[redacted]"

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
