package types

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/musterd/musterd/pkg/apis/muster/v1alpha1"
	"github.com/musterd/musterd/pkg/events"
)

// Kind is a resource kind the API serves, with the names it goes by.
type Kind struct {
	// Name is the kind as documents spell it: "MCPServer".
	Name string
	// Plural is the kind in paths: "mcpservers".
	Plural string
	// Singular is "mcpserver".
	Singular string
	// Short is the short name: "mcps".
	Short string
}

var kinds = []Kind{
	{Name: v1alpha1.KindMCPServer, Plural: "mcpservers", Singular: "mcpserver", Short: "mcps"},
	{Name: v1alpha1.KindWorkflow, Plural: "workflows", Singular: "workflow", Short: "wf"},
}

// Kinds returns the kinds the API serves, in the order listings use.
func Kinds() []Kind { return slices.Clone(kinds) }

// ErrUnknownKind is matched (errors.Is) by ResolveKind's error.
var ErrUnknownKind = errors.New("unknown kind")

// ResolveKind returns the kind s names: its plural, singular, short name or
// kind name, in any case.
func ResolveKind(s string) (Kind, error) {
	for _, k := range kinds {
		for _, alias := range []string{k.Plural, k.Singular, k.Short, k.Name} {
			if strings.EqualFold(s, alias) {
				return k, nil
			}
		}
	}
	valid := make([]string, len(kinds))
	for i, k := range kinds {
		valid[i] = fmt.Sprintf("%s (%s, %s)", k.Plural, k.Singular, k.Short)
	}
	return Kind{}, fmt.Errorf("%w %q: valid kinds are %s", ErrUnknownKind, s, strings.Join(valid, ", "))
}

// Ref spells the resource of kind k in namespace and name as paths do:
// "workflows/default/greet".
func (k Kind) Ref(namespace, name string) string {
	return k.Plural + "/" + namespace + "/" + name
}

// RefOf spells key as Kind.Ref does, or as key.String() for a kind the API
// does not serve.
func RefOf(key events.Key) string {
	key = key.Canonical()
	for _, k := range kinds {
		if k.Name == key.Kind {
			return k.Ref(key.Namespace, key.Name)
		}
	}
	return key.String()
}

// Object is a resource as the API shows it.
type Object struct {
	APIVersion string     `json:"apiVersion"`
	Kind       string     `json:"kind"`
	Metadata   ObjectMeta `json:"metadata"`
	// Spec is the last good spec, the one in force; absent while the
	// resource's file has never yielded a good definition.
	Spec json.RawMessage `json:"spec,omitempty"`
	// Status is the resource's status in the v1alpha1 schema as its
	// reconciler last observed it; absent if it observed none.
	Status json.RawMessage `json:"status,omitempty"`
	// Reconcile is musterd's reconcile state of the resource.
	Reconcile Reconcile `json:"reconcile"`
	// Files declare the resource: one, or several in a conflict.
	Files []string `json:"files,omitempty"`
	// Process is the process of a running stdio MCPServer as the
	// supervisor sees it now; absent for anything else.
	Process *Process `json:"process,omitempty"`
	// Calls are an MCPServer's recent tool calls; absent when it had none
	// in them, and for anything else.
	Calls *Calls `json:"calls,omitempty"`
}

// Process is a managed server's process.
type Process struct {
	PID int `json:"pid"`
}

// Key returns the object's key.
func (o Object) Key() events.Key {
	return events.NewKey(o.Kind, o.Metadata.Namespace, o.Metadata.Name)
}

// ObjectMeta is the part of metadata the API shows.
type ObjectMeta struct {
	Name        string            `json:"name"`
	Namespace   string            `json:"namespace"`
	Labels      map[string]string `json:"labels,omitempty"`
	Annotations map[string]string `json:"annotations,omitempty"`
	Generation  int64             `json:"generation,omitempty"`
	// Hash is the content hash of the definition in force, the spec shown;
	// Reconcile.ObservedHash equals it once a reconcile of this definition
	// succeeded.
	Hash string `json:"hash,omitempty"`
}

// Reconcile is a resource's reconcile state, the fields of a status file's
// reconcile section.
type Reconcile struct {
	// State is Pending, Reconciling, Synced, Error or Failed.
	State string `json:"state"`
	// LastReconcileTime is when the last reconcile finished.
	LastReconcileTime *time.Time `json:"lastReconcileTime,omitempty"`
	// LastError is the last reconcile error, or else what is wrong with the
	// resource's file; redacted.
	LastError string `json:"lastError,omitempty"`
	// RetryCount is the number of retries in the current failure streak.
	RetryCount int `json:"retryCount"`
	// NextRetry is when a failed reconcile is retried; absent when no retry
	// is scheduled.
	NextRetry *time.Time `json:"nextRetry,omitempty"`
	// CorrelationID is that of the chain of events that set this state.
	CorrelationID string `json:"correlationID,omitempty"`
	// ObservedHash is the Metadata.Hash of the definition the last
	// successful reconcile covers. A Synced state whose ObservedHash is not
	// the object's Metadata.Hash is of an older definition: the edit since
	// is still to be reconciled.
	ObservedHash string `json:"observedHash,omitempty"`
	// Note is "reconciliation disabled" while the resource's kind is not
	// reconciled: its changes are indexed, and reconciled once it is
	// enabled again.
	Note string `json:"note,omitempty"`
}

// List is the answer to a listing.
type List struct {
	Items []Object `json:"items"`
}

// EventList is the body of a resource's recent events: each item is an
// event as events.Marshal writes it, oldest first.
type EventList struct {
	Items []json.RawMessage `json:"items"`
}

// ErrorResponse is the body of every error answer.
type ErrorResponse struct {
	Error string `json:"error"`
}

// ReconcileResponse is the answer to a reconcile request.
type ReconcileResponse struct {
	// Key is the resource whose reconcile was triggered.
	Key events.Key `json:"key"`
}

// Health is the answer of /healthz.
type Health struct {
	Healthy    bool              `json:"healthy"`
	Components []ComponentHealth `json:"components"`
}

// ComponentHealth is one component's state and health.
type ComponentHealth struct {
	Name    string `json:"name"`
	State   string `json:"state"`
	Healthy bool   `json:"healthy"`
	// Error says why it failed or is unhealthy; redacted.
	Error string `json:"error,omitempty"`
}

// Readiness is the answer of /readyz.
type Readiness struct {
	Ready bool `json:"ready"`
}

// EventFilter selects the events of a stream. An empty field selects
// everything.
//
// A filter on kind, namespace or name selects events about one resource
// (events.Keyed) whose key matches, and reconciliation triggers naming at
// least one matching key; it never selects events about no resource, such
// as IndexSynchronized.
type EventFilter struct {
	// Kind is the kind name, "Workflow"; ParseEventFilter resolves aliases.
	Kind      string
	Namespace string
	Name      string
	// Types are event type names, such as "ResourceSynced".
	Types []string
}

// Query encodes f as the stream's query parameters.
func (f EventFilter) Query() url.Values {
	q := url.Values{}
	for param, v := range map[string]string{"kind": f.Kind, "namespace": f.Namespace, "name": f.Name, "type": strings.Join(f.Types, ",")} {
		if v != "" {
			q.Set(param, v)
		}
	}
	return q
}

// ParseEventFilter reads a filter from query parameters kind, namespace,
// name and type (comma-separated). An unknown kind is an error matching
// ErrUnknownKind; an event type that is not registered (events.Types) is
// an error naming the valid ones.
func ParseEventFilter(q url.Values) (EventFilter, error) {
	f := EventFilter{Namespace: q.Get("namespace"), Name: q.Get("name")}
	if s := q.Get("kind"); s != "" {
		k, err := ResolveKind(s)
		if err != nil {
			return EventFilter{}, err
		}
		f.Kind = k.Name
	}
	if s := q.Get("type"); s != "" {
		valid := events.Types()
		for t := range strings.SplitSeq(s, ",") {
			t = strings.TrimSpace(t)
			if !slices.Contains(valid, t) {
				return EventFilter{}, fmt.Errorf("unknown event type %q: valid types are %s", t, strings.Join(valid, ", "))
			}
			f.Types = append(f.Types, t)
		}
	}
	return f, nil
}

// Match reports whether f selects e.
func (f EventFilter) Match(e events.Event) bool {
	if len(f.Types) > 0 && !slices.Contains(f.Types, e.EventType()) {
		return false
	}
	if f.Kind == "" && f.Namespace == "" && f.Name == "" {
		return true
	}
	switch e := e.(type) {
	case events.Keyed:
		return f.matchKey(e.ResourceKey())
	case events.ReconciliationTriggered:
		for tk := range e.Keys.All() {
			if f.matchKey(tk.Key) {
				return true
			}
		}
	}
	return false
}

func (f EventFilter) matchKey(k events.Key) bool {
	k = k.Canonical()
	return (f.Kind == "" || f.Kind == k.Kind) && (f.Namespace == "" || f.Namespace == k.Namespace) && (f.Name == "" || f.Name == k.Name)
}
