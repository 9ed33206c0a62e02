package kubeevents

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"
	"unicode/utf8"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	toolsevents "k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/musterd/musterd/pkg/apis/muster/v1alpha1"
	"github.com/musterd/musterd/pkg/bus"
	"github.com/musterd/musterd/pkg/events"
	"github.com/musterd/musterd/pkg/musterevents"
	"github.com/musterd/musterd/pkg/redact"
)

// Name is the component's name.
const Name = "kube-events"

// musterd's own reasons of the Events recorded, beside muster's
// (package musterevents) for the servers' lifecycle and the workflows'
// runs, steps and validations.
const (
	ReasonSynced            = "Synced"
	ReasonReconcileFailed   = "ReconcileFailed"
	ReasonInvalidDefinition = "InvalidDefinition"
)

// Actions of the Events recorded (events.k8s.io/v1 requires one).
const (
	ActionReconcile = "Reconcile"
	ActionValidate  = "Validate"
	ActionStart     = "Start"
	ActionExecute   = "Execute"
)

// Defaults of Options.
const (
	DefaultReportingController = "musterd"
	DefaultRequestTimeout      = 10 * time.Second
)

// maxNote is the API server's limit of an Event's note.
const maxNote = 1024

// Options configure a Recorder. The zero value of each optional field is
// its default.
type Options struct {
	// Config reaches the API server. Required.
	Config *rest.Config
	// ResourceStatus returns a resource's status in the v1alpha1 schema
	// (v1alpha1.MCPServerStatus or v1alpha1.WorkflowStatus) as its
	// reconciler last observed it. Required.
	ResourceStatus func(key events.Key) (status any, ok bool)
	// DefinitionError returns why the resource's current definition is not
	// usable (the desired-state index's entry error), or nil. Optional.
	DefinitionError func(key events.Key) error
	// StepCount returns the number of steps of a workflow's definition in
	// force, for muster's execution messages. Optional.
	StepCount func(key events.Key) (int, bool)
	// Namespace limits the start's listing to one namespace, as the
	// watcher watches; empty means all namespaces.
	Namespace string
	// ReportingController names musterd in the Events. Default
	// DefaultReportingController.
	ReportingController string
	// RequestTimeout bounds each read of the API server. Default
	// DefaultRequestTimeout.
	RequestTimeout time.Duration
	// Logger defaults to slog.Default().
	Logger *slog.Logger
}

// seen is what the recorder last knew of a resource.
type seen struct {
	generation int64  // the last generation recorded Synced (or found observed at start)
	invalid    string // the InvalidDefinition error recorded, while it holds
}

// Recorder is the component that records Events. Make it with New.
type Recorder struct {
	bus      *bus.Bus
	opts     Options
	scheme   *runtime.Scheme
	reader   client.Reader
	events   *kubernetes.Clientset
	attached bus.Attachment

	// record sends an Event; replaced in Start by the broadcaster's.
	record toolsevents.EventRecorder
	// resources and servers are touched by the outcomes' subscription's
	// goroutine only; runs by the runs' subscription's.
	resources map[events.Key]*seen
	// servers tells the servers' lifecycle, runs the workflows' runs,
	// steps and validations, in muster's words.
	servers, runs *musterevents.Translator
}

// New returns a recorder of b's outcomes, or an error naming the missing
// option.
func New(b *bus.Bus, opts Options) (*Recorder, error) {
	switch {
	case b == nil:
		return nil, errors.New("kube-events: a bus is required")
	case opts.Config == nil:
		return nil, errors.New("kube-events: Options.Config is required")
	case opts.ResourceStatus == nil:
		return nil, errors.New("kube-events: Options.ResourceStatus is required")
	}
	if opts.DefinitionError == nil {
		opts.DefinitionError = func(events.Key) error { return nil }
	}
	if opts.ReportingController == "" {
		opts.ReportingController = DefaultReportingController
	}
	if opts.RequestTimeout == 0 {
		opts.RequestTimeout = DefaultRequestTimeout
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	scheme := runtime.NewScheme()
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		return nil, fmt.Errorf("kube-events: scheme: %w", err)
	}
	reader, err := client.New(opts.Config, client.Options{Scheme: scheme})
	if err != nil {
		return nil, fmt.Errorf("kube-events: client for %s: %w", opts.Config.Host, err)
	}
	clientset, err := kubernetes.NewForConfig(opts.Config)
	if err != nil {
		return nil, fmt.Errorf("kube-events: events client for %s: %w", opts.Config.Host, err)
	}
	r := &Recorder{bus: b, opts: opts, scheme: scheme, reader: reader, events: clientset}
	r.init()
	return r, nil
}

// init makes the recorder's memory and translators.
func (r *Recorder) init() {
	r.resources = map[events.Key]*seen{}
	tr := musterevents.Options{Status: r.opts.ResourceStatus, StepCount: r.opts.StepCount, DefinitionError: r.opts.DefinitionError, Listed: true}
	r.servers, r.runs = musterevents.New(tr), musterevents.New(tr)
}

// Name is the component's name.
func (r *Recorder) Name() string { return Name }

// SubscriptionReady is closed once Start has subscribed.
func (r *Recorder) SubscriptionReady() <-chan struct{} { return r.attached.SubscriptionReady() }

// BusySince reports since when its handler has been running, if it is.
func (r *Recorder) BusySince() (time.Time, bool) { return r.attached.BusySince() }

// Start takes the generations already observed, then records Events of
// the outcomes published until ctx is done.
func (r *Recorder) Start(ctx context.Context) error {
	broadcaster := toolsevents.NewBroadcaster(&toolsevents.EventSinkImpl{Interface: r.events.EventsV1()})
	if err := broadcaster.StartRecordingToSinkWithContext(ctx); err != nil {
		return fmt.Errorf("kube-events: %w", err)
	}
	defer broadcaster.Shutdown()
	r.record = broadcaster.NewRecorder(r.scheme, r.opts.ReportingController)
	r.seed(ctx)

	sub, err := r.bus.Subscribe(bus.SubscriberOptions{
		Name: Name,
		// The newest outcome of each key, in publish order: the recorder
		// compares snapshots, so a skipped one loses nothing but a
		// duplicate.
		Delivery: bus.Coalescing(bus.ByTypeAndResourceKey),
		Handlers: []bus.Handler{
			bus.On(func(e events.ResourceSynced) { r.outcome(ctx, e, e.Key, e.Deleted, "") }),
			bus.On(func(e events.ResourceFailed) { r.outcome(ctx, e, e.Key, false, e.Error) }),
		},
	})
	if err != nil {
		return fmt.Errorf("kube-events: %w", err)
	}
	// Every run, step and validation tells something of its own: they
	// are not coalesced, and a burst past the bound loses the excess
	// (counted by the bus) rather than slowing the engine.
	runs, err := r.bus.Subscribe(bus.SubscriberOptions{
		Name:     Name + "-runs",
		Delivery: bus.Lossy(runsBuffer),
		Handlers: []bus.Handler{
			bus.On(func(e events.WorkflowExecutionStarted) { r.run(ctx, e) }),
			bus.On(func(e events.WorkflowExecutionFinished) { r.run(ctx, e) }),
			bus.On(func(e events.WorkflowStepStarted) { r.run(ctx, e) }),
			bus.On(func(e events.WorkflowStepFinished) { r.run(ctx, e) }),
			bus.On(func(e events.DefinitionValidated) { r.run(ctx, e) }),
		},
	})
	if err != nil {
		sub.Unsubscribe()
		return fmt.Errorf("kube-events: %w", err)
	}
	r.attached.Attach(sub)
	<-ctx.Done()
	sub.Unsubscribe()
	runs.Unsubscribe()
	<-sub.Done()
	<-runs.Done()
	return nil
}

// runsBuffer bounds the runs' subscription's mailbox.
const runsBuffer = 1024

// run records the muster events of a workflow's run, step or validation.
func (r *Recorder) run(ctx context.Context, e events.Keyed) {
	out := r.runs.Translate(e)
	if len(out) == 0 {
		return
	}
	obj, err := r.object(ctx, e.ResourceKey().Canonical())
	if err != nil {
		r.opts.Logger.Debug("kube-events: event not recorded", "key", e.ResourceKey().String(), "reason", string(out[0].Reason),
			"error", redact.String(err.Error()))
		return
	}
	for _, m := range out {
		action := ActionExecute
		if _, ok := e.(events.DefinitionValidated); ok {
			action = ActionValidate
		}
		r.record.Eventf(obj, nil, m.Type, string(m.Reason), action, "%s", cut(redact.String(m.Message)))
	}
}

// seed takes the observedGeneration of each resource's status as
// recorded: the previous leader reported those generations. Without the
// listing (the API server failing just now), each resource's next
// successful reconcile records Synced once.
func (r *Recorder) seed(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, r.opts.RequestTimeout)
	defer cancel()
	var servers v1alpha1.MCPServerList
	var workflows v1alpha1.WorkflowList
	for _, list := range []client.ObjectList{&servers, &workflows} {
		if err := r.reader.List(ctx, list, client.InNamespace(r.opts.Namespace)); err != nil {
			r.opts.Logger.Info("kube-events: cannot list the resources' observed generations; each resource's next reconcile records Synced once",
				"error", redact.String(err.Error()))
			return
		}
	}
	for _, s := range servers.Items {
		if s.Status != nil {
			r.resources[events.Key{Kind: v1alpha1.KindMCPServer, Namespace: s.Namespace, Name: s.Name}.Canonical()] =
				&seen{generation: s.Status.ObservedGeneration}
		}
	}
	for _, w := range workflows.Items {
		if w.Status != nil {
			r.resources[events.Key{Kind: v1alpha1.KindWorkflow, Namespace: w.Namespace, Name: w.Name}.Canonical()] =
				&seen{generation: w.Status.ObservedGeneration}
		}
	}
}

// outcome records what a reconcile's outcome says that was not said yet.
// failure is the reconcile's error, empty when it succeeded.
func (r *Recorder) outcome(ctx context.Context, e events.Event, key events.Key, deleted bool, failure string) {
	key = key.Canonical()
	told := r.servers.Translate(e) // kept up to date, deletions included
	if deleted {
		delete(r.resources, key) // its Events go with the object
		return
	}
	s, ok := r.resources[key]
	if !ok {
		s = &seen{}
		r.resources[key] = s
	}
	var pending []note
	if defErr := r.opts.DefinitionError(key); defErr != nil {
		if msg := defErr.Error(); msg != s.invalid {
			s.invalid = msg
			pending = append(pending, note{corev1.EventTypeWarning, ReasonInvalidDefinition, ActionValidate, msg})
		}
	} else {
		s.invalid = ""
	}
	if failure != "" {
		pending = append(pending, note{corev1.EventTypeWarning, ReasonReconcileFailed, ActionReconcile, failure})
	}
	status, ok := r.opts.ResourceStatus(key)
	if failure == "" && ok {
		pending = append(pending, r.observed(s, status)...)
	}
	// A server down is a reconcile that fails (its backoff), and still
	// a transition to tell, in muster's words.
	for _, m := range told {
		pending = append(pending, note{m.Type, string(m.Reason), ActionStart, m.Message})
	}
	if len(pending) == 0 {
		return
	}
	obj, err := r.object(ctx, key)
	if err != nil {
		r.opts.Logger.Debug("kube-events: event not recorded", "key", key.String(), "reason", pending[0].reason,
			"error", redact.String(err.Error()))
		return
	}
	for _, n := range pending {
		r.record.Eventf(obj, nil, n.eventType, n.reason, n.action, "%s", cut(redact.String(n.message)))
	}
}

// cut shortens msg to the API's limit of a note, at a character's start.
func cut(msg string) string {
	if len(msg) <= maxNote {
		return msg
	}
	end := maxNote - len("…")
	for end > 0 && !utf8.RuneStart(msg[end]) {
		end--
	}
	return msg[:end] + "…"
}

// note is one Event to record.
type note struct{ eventType, reason, action, message string }

// observed compares what the reconciler observed now with s, updates s,
// and returns the Events the difference calls for.
func (r *Recorder) observed(s *seen, status any) []note {
	var out []note
	var generation int64
	switch st := status.(type) {
	case v1alpha1.MCPServerStatus:
		generation = st.ObservedGeneration
	case v1alpha1.WorkflowStatus:
		generation = st.ObservedGeneration
	default:
		return nil
	}
	if generation != s.generation && generation != 0 && s.invalid == "" {
		s.generation = generation
		out = append([]note{{corev1.EventTypeNormal, ReasonSynced, ActionReconcile,
			fmt.Sprintf("generation %d reconciled", generation)}}, out...)
	}
	return out
}

// object reads the resource the Events are about; the broadcaster refers
// to it by kind, name, namespace and UID.
func (r *Recorder) object(ctx context.Context, key events.Key) (client.Object, error) {
	var obj client.Object
	switch key.Kind {
	case v1alpha1.KindMCPServer:
		obj = &v1alpha1.MCPServer{}
	case v1alpha1.KindWorkflow:
		obj = &v1alpha1.Workflow{}
	default:
		return nil, fmt.Errorf("%s: no custom resource of kind %q", key, key.Kind)
	}
	ctx, cancel := context.WithTimeout(ctx, r.opts.RequestTimeout)
	defer cancel()
	if err := r.reader.Get(ctx, types.NamespacedName{Namespace: key.Namespace, Name: key.Name}, obj); err != nil {
		return nil, err
	}
	return obj, nil
}
