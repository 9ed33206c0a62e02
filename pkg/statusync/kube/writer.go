package kube

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"strings"
	"syscall"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/musterd/musterd/pkg/apis/muster/v1alpha1"
	"github.com/musterd/musterd/pkg/events"
	"github.com/musterd/musterd/pkg/redact"
	"github.com/musterd/musterd/pkg/statusync"
)

// Categories of the writer's failures, for StatusSyncFailed and the
// status-sync metrics.
const (
	CategoryConflictAfterRetries = "conflict_after_retries"
	CategoryCRDNotFound          = "crd_not_found"
	CategoryAPIServerUnreachable = "api_server_unreachable"
	CategoryTimeout              = statusync.CategoryTimeout
	CategoryPermissionDenied     = "permission_denied"
	CategoryAuthenticationFailed = "authentication_failed"
	CategoryOther                = statusync.CategoryOther
)

// Reasons of the Ready condition the writer sets itself; the reconcilers
// set the others.
const (
	// ReasonInvalidDefinition: the resource's current generation failed
	// validation; the last good one stays in force.
	ReasonInvalidDefinition = "InvalidDefinition"
	// ReasonReconcileFailed: the reconcile failed before the reconciler
	// observed anything.
	ReasonReconcileFailed = "ReconcileFailed"
	// ReasonDisabledByOperator: the reason of ConditionReconciliationDisabled.
	ReasonDisabledByOperator = "DisabledByOperator"
)

// ConditionReconciliationDisabled is True while an operator has disabled
// the reconciliation of the resource's kind, and absent otherwise.
const ConditionReconciliationDisabled = "ReconciliationDisabled"

// Options configures a Writer.
type Options struct {
	// Client reads and writes the resources. Required. An uncached client
	// (client.New) is best: a conflict must be retried on the object as the
	// API server has it, not as a cache still has it.
	Client client.Client
	// ResourceStatus returns a resource's status in the v1alpha1 schema
	// (v1alpha1.MCPServerStatus or v1alpha1.WorkflowStatus) as its
	// reconciler last observed it. Required.
	ResourceStatus func(key events.Key) (status any, ok bool)
	// DefinitionError returns why the resource's current definition is not
	// usable (the desired-state index's entry error), or nil. Optional.
	DefinitionError func(key events.Key) error
	// Elected is closed once this replica leads; nothing is written
	// before. Nil: this replica writes at once.
	Elected <-chan struct{}
}

// Writer writes statuses to the status subresource. It implements
// statusync.StatusWriter.
type Writer struct {
	opts Options
}

var _ statusync.StatusWriter = (*Writer)(nil)

// New returns a writer for opts.
func New(opts Options) (*Writer, error) {
	switch {
	case opts.Client == nil:
		return nil, errors.New("kube status writer: Options.Client is required")
	case opts.ResourceStatus == nil:
		return nil, errors.New("kube status writer: Options.ResourceStatus is required")
	}
	if opts.DefinitionError == nil {
		opts.DefinitionError = func(events.Key) error { return nil }
	}
	return &Writer{opts: opts}, nil
}

// WriteStatus writes st, and what the reconciler observed of st.Key, to the
// resource's status subresource, unless it holds that already. Before
// Options.Elected is closed it returns statusync.ErrSkipped.
func (w *Writer) WriteStatus(ctx context.Context, st statusync.Status) error {
	if !w.leading() {
		return statusync.ErrSkipped
	}
	key := st.Key.Canonical()
	var obj client.Object
	switch key.Kind {
	case v1alpha1.KindMCPServer:
		obj = &v1alpha1.MCPServer{}
	case v1alpha1.KindWorkflow:
		obj = &v1alpha1.Workflow{}
	default:
		return statusync.WithCategory(CategoryOther, fmt.Errorf("%s: no custom resource holds the status of kind %q", key, key.Kind))
	}
	name := types.NamespacedName{Namespace: key.Namespace, Name: key.Name}
	attempts := 0
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		attempts++
		if err := w.opts.Client.Get(ctx, name, obj); err != nil {
			return err
		}
		if !w.update(obj, key, st) {
			return nil
		}
		return w.opts.Client.Status().Update(ctx, obj)
	})
	switch {
	case err == nil:
		return nil
	case apierrors.IsNotFound(err) && Category(err) != CategoryCRDNotFound:
		return nil // deleted meanwhile: its status went with it
	case apierrors.IsConflict(err):
		return statusync.WithCategory(CategoryConflictAfterRetries,
			fmt.Errorf("%s: status write still conflicts after %d attempts: %w", key, attempts, err))
	}
	return statusync.WithCategory(Category(err), fmt.Errorf("%s: status write: %w", key, err))
}

// DeleteStatus writes nothing: a deleted resource's status is deleted with
// it.
func (w *Writer) DeleteStatus(context.Context, events.Key) error { return nil }

func (w *Writer) leading() bool {
	if w.opts.Elected == nil {
		return true
	}
	select {
	case <-w.opts.Elected:
		return true
	default:
		return false
	}
}

// update sets obj's status to what it should be and reports whether that
// changed it.
func (w *Writer) update(obj client.Object, key events.Key, st statusync.Status) bool {
	observed, reconciled := w.opts.ResourceStatus(key)
	defErr := w.opts.DefinitionError(key)
	failed := st.State == statusync.StateError || st.State == statusync.StateFailed
	gen := obj.GetGeneration()
	switch o := obj.(type) {
	case *v1alpha1.MCPServer:
		next := ptr.Deref(o.Status.DeepCopy(), v1alpha1.MCPServerStatus{})
		if s, ok := observed.(v1alpha1.MCPServerStatus); reconciled && ok {
			next = s
		}
		switch {
		case defErr != nil:
			next.LastError = redact.String(defErr.Error())
			next.ObservedGeneration = gen
			setReady(&next.Conditions, metav1.ConditionFalse, ReasonInvalidDefinition, next.LastError, gen)
		case failed && !reconciled:
			next.State = v1alpha1.MCPServerStateFailed
			next.LastError = st.LastError
			setReady(&next.Conditions, metav1.ConditionFalse, ReasonReconcileFailed, st.LastError, next.ObservedGeneration)
		case failed && next.LastError == "":
			next.LastError = st.LastError
		}
		setDisabled(&next.Conditions, ptr.Deref(o.Status, v1alpha1.MCPServerStatus{}).Conditions, st, gen)
		return replace(&o.Status, next)
	case *v1alpha1.Workflow:
		next := ptr.Deref(o.Status.DeepCopy(), v1alpha1.WorkflowStatus{})
		if s, ok := observed.(v1alpha1.WorkflowStatus); reconciled && ok {
			next = s
		}
		if defErr != nil {
			// The reconciler listed the errors; the status describes the
			// generation they are about.
			next.ObservedGeneration = gen
			if c := meta.FindStatusCondition(next.Conditions, v1alpha1.ConditionReady); c != nil {
				c.ObservedGeneration = gen
			}
		}
		setDisabled(&next.Conditions, ptr.Deref(o.Status, v1alpha1.WorkflowStatus{}).Conditions, st, gen)
		return replace(&o.Status, next)
	}
	return false
}

// replace sets *cur to next, as the API server will store it, and reports
// whether that differs from *cur (none is the zero T). Times are compared
// as the API server keeps them, to the second: otherwise every status
// would differ from the one written.
func replace[T any](cur **T, next T) bool {
	var stored T
	data, err := json.Marshal(next)
	if err == nil {
		err = json.Unmarshal(data, &stored)
	}
	if err != nil {
		stored = next
	}
	if equality.Semantic.DeepEqual(ptr.Deref(*cur, *new(T)), stored) {
		return false
	}
	*cur = &stored
	return true
}

// setDisabled sets the ReconciliationDisabled condition while an operator
// has disabled the reconciliation of st's kind, and removes it otherwise:
// the status then says why a change of the resource shows no reconcile.
// The reconciler's status, which conds starts from, knows nothing of it,
// so its transition time is kept from the stored one, prev.
func setDisabled(conds *[]metav1.Condition, prev []metav1.Condition, st statusync.Status, gen int64) {
	if !st.ReconcileDisabled {
		meta.RemoveStatusCondition(conds, ConditionReconciliationDisabled)
		return
	}
	c := metav1.Condition{
		Type: ConditionReconciliationDisabled, Status: metav1.ConditionTrue, Reason: ReasonDisabledByOperator, ObservedGeneration: gen,
		Message: "reconciliation of " + st.Key.Kind + " is disabled; changes wait until it is enabled (musterd enable)",
	}
	if old := meta.FindStatusCondition(prev, ConditionReconciliationDisabled); old != nil && old.Status == metav1.ConditionTrue {
		c.LastTransitionTime = old.LastTransitionTime
	}
	meta.SetStatusCondition(conds, c)
}

// setReady sets the Ready condition, keeping its transition time while its
// status holds.
func setReady(conds *[]metav1.Condition, status metav1.ConditionStatus, reason, msg string, gen int64) {
	if i := strings.IndexByte(msg, '\n'); i >= 0 {
		msg = msg[:i]
	}
	meta.SetStatusCondition(conds, metav1.Condition{
		Type: v1alpha1.ConditionReady, Status: status, Reason: reason, Message: msg, ObservedGeneration: gen,
	})
}

// Category classifies an API error for metrics and logs: one of the
// Category constants. A conflict is "other" here: only the writer knows
// when conflicts outlasted its retries.
func Category(err error) string {
	var status apierrors.APIStatus
	switch {
	case err == nil:
		return ""
	case meta.IsNoMatchError(err):
		return CategoryCRDNotFound
	case apierrors.IsNotFound(err) && errors.As(err, &status) &&
		(status.Status().Details == nil || status.Status().Details.Name == ""):
		// A 404 naming no object: the resource type itself is unknown.
		return CategoryCRDNotFound
	case apierrors.IsUnauthorized(err):
		return CategoryAuthenticationFailed
	case apierrors.IsForbidden(err):
		return CategoryPermissionDenied
	case apierrors.IsTimeout(err), apierrors.IsServerTimeout(err), errors.Is(err, context.DeadlineExceeded):
		return CategoryTimeout
	case apierrors.IsServiceUnavailable(err), utilnet.IsConnectionRefused(err), utilnet.IsConnectionReset(err),
		utilnet.IsProbableEOF(err), errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.EHOSTUNREACH),
		errors.Is(err, syscall.ENETUNREACH):
		return CategoryAPIServerUnreachable
	}
	var netErr net.Error
	if errors.As(err, &netErr) {
		if netErr.Timeout() {
			return CategoryTimeout
		}
		return CategoryAPIServerUnreachable
	}
	var dnsErr *net.DNSError
	if errors.As(err, &dnsErr) {
		return CategoryAPIServerUnreachable
	}
	return CategoryOther
}
