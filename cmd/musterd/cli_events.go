package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/musterd/musterd/pkg/api/client"
	"github.com/musterd/musterd/pkg/api/types"
	"github.com/musterd/musterd/pkg/controls"
	"github.com/musterd/musterd/pkg/events"
	"github.com/musterd/musterd/pkg/statusync"
)

// events prints the daemon's events: those that arrive within --for, or,
// with -f, until interrupted.
func (c *cli) events(ctx context.Context, cmd *command) error {
	var (
		follow     bool
		window     time.Duration
		kind, name string
		typeList   string
	)
	cmd.fs.BoolVar(&follow, "f", false, "follow the events until interrupted")
	cmd.fs.BoolVar(&follow, "follow", false, "same as -f")
	cmd.fs.DurationVar(&window, "for", 2*time.Second, "without -f, how long to print the events that arrive")
	cmd.fs.StringVar(&kind, "kind", "", "only events about resources of this kind")
	cmd.fs.StringVar(&name, "name", "", "only events about resources of this name")
	cmd.fs.StringVar(&typeList, "type", "", "only events of these types, comma-separated (ResourceSynced,ResourceFailed)")
	if err := cmd.parse(); err != nil {
		return err
	}
	if len(cmd.args) > 0 {
		return usagef("unexpected argument %q", cmd.args[0])
	}
	if !follow && window <= 0 {
		return usagef("--for must be positive, not %s", window)
	}
	filter := types.EventFilter{Namespace: cmd.namespace, Name: name}
	if kind != "" {
		k, err := types.ResolveKind(kind)
		if err != nil {
			return usageError{"--kind: " + err.Error()}
		}
		filter.Kind = k.Name
	}
	if typeList != "" {
		filter.Types = strings.Split(typeList, ",")
	}
	cl, err := cmd.client(c.http)
	if err != nil {
		return err
	}
	if !follow {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, window)
		defer cancel()
	}
	stream, err := cl.Events(ctx, filter)
	if err != nil {
		return err
	}
	defer stream.Close()
	return c.printEvents(stream, nil)
}

// printEvents prints a stream's events, one line each, until the stream's
// context is done.
// printEvents prints the stream's events until it ends, skipping those
// already printed (seen holds their data).
func (c *cli) printEvents(s *client.EventStream, seen map[string]bool) error {
	for {
		ev, err := s.Next()
		switch {
		case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
			return nil
		case errors.Is(err, io.EOF):
			return errors.New("the daemon ended the event stream")
		case err != nil:
			return err
		case ev.Dropped > 0:
			fmt.Fprintf(c.stderr, "musterd: the daemon dropped %d events of this stream: it was read too slowly\n", ev.Dropped)
		case seen[string(ev.Data)]:
		default:
			fmt.Fprintln(c.stdout, eventLine(ev))
		}
	}
}

// eventLine spells an event as "time  type  resource  details".
func eventLine(ev client.Event) string {
	if ev.Event == nil { // a type this program does not know
		return fmt.Sprintf("%-24s  %-23s  -  %s", "-", ev.Type, ev.Data)
	}
	e := ev.Event
	resource := "-"
	if k, ok := e.(events.Keyed); ok {
		resource = types.RefOf(k.ResourceKey())
	}
	var d details
	switch e := e.(type) {
	case events.ResourceChanged:
		d.add("operation", string(e.Operation)).add("source", string(e.Source)).add("file", e.FilePath)
	case events.IndexSynchronized:
		d.add("source", string(e.Source))
	case events.ReconciliationTriggered:
		keys := e.Keys.Keys()
		var refs []string
		for _, k := range keys[:min(len(keys), 3)] {
			refs = append(refs, types.RefOf(k))
		}
		list := strings.Join(refs, ",")
		if more := len(keys) - len(refs); more > 0 {
			list += fmt.Sprintf(",…(%d more)", more)
		}
		d.add("reason", string(e.Reason)).add("keys", list)
	case events.ReconciliationStarted:
		d.add("attempt", strconv.Itoa(e.Attempt))
	case events.ResourceSynced:
		d.add("attempt", strconv.Itoa(e.Attempt)).add("duration", e.Duration.String())
		if e.Deleted {
			d.add("deleted", "true")
		}
		if e.RequeueAfter > 0 {
			d.add("requeueAfter", e.RequeueAfter.String())
		}
	case events.ResourceFailed:
		d.add("attempt", strconv.Itoa(e.Attempt)).add("duration", e.Duration.String())
		switch {
		case e.Permanent:
			d.add("permanent", "true")
		case e.WillRetry():
			d.add("nextRetry", e.NextRetry.UTC().Format(time.RFC3339))
		default:
			d.add("retries", "exhausted")
		}
		d.add("error", strconv.Quote(e.Error))
	case events.StatusSynced:
		d.add("category", e.Category)
	case events.StatusSyncFailed:
		d.add("category", e.Category).add("attempt", strconv.Itoa(e.Attempt)).add("error", strconv.Quote(e.Error))
	case events.ServiceStateChanged:
		d.add("state", e.State).add("previous", e.PreviousState)
		if e.Error != "" {
			d.add("error", strconv.Quote(e.Error))
		}
	case events.BecameLeader:
		d.add("identity", e.Identity)
	case events.LostLeadership:
		d.add("identity", e.Identity)
	case controls.ServiceRequested:
		d.add("action", e.Action).add("reason", e.Reason).add("correlationId", e.CorrelationID)
	case controls.ReconciliationToggled:
		d.add("kind", e.Kind).add("enabled", strconv.FormatBool(e.Enabled))
	case controls.ResyncRequested:
		d.add("kind", cmp.Or(e.Kind, "all")).add("keys", strconv.Itoa(e.Keys)).add("correlationId", e.CorrelationID)
	case events.WorkflowExecutionStarted:
		d.add("execution", e.ExecutionID)
	case events.WorkflowExecutionFinished:
		d.add("execution", e.ExecutionID).add("status", e.Status).add("duration", e.Duration.String())
		if e.Error != "" {
			d.add("error", strconv.Quote(e.Error))
		}
	}
	line := fmt.Sprintf("%s  %-23s  %s  %s", e.Metadata().Time.UTC().Format("2006-01-02T15:04:05.000Z07:00"), e.EventType(), resource, d)
	return strings.TrimRight(line, " ")
}

// details are an event's key=value pairs; empty values are left out.
type details []string

func (d *details) add(key, value string) *details {
	if value != "" {
		*d = append(*d, key+"="+value)
	}
	return d
}

func (d details) String() string { return strings.Join(d, " ") }

// conditions are what wait can wait for, each with the state it means.
var conditions = map[string]string{
	"synced":  string(statusync.StateSynced),
	"error":   string(statusync.StateError),
	"failed":  string(statusync.StateFailed),
	"deleted": "deleted",
}

// wait waits until a resource reaches a condition.
//
// It subscribes to the resource's events first, then reads its state, and
// reads it again on every event about it (and on a notice of dropped
// events): whatever happens after the subscription is seen, at once. The
// status store publishes StatusSynced after it has applied a change, so the
// read that follows it sees the change.
//
// Synced counts only as of the definition in force: the one the API shows
// (metadata.hash) must be the one the successful reconcile covered
// (reconcile.observedHash). Right after an edit the store may still hold
// the Synced of the previous definition, which the index has replaced
// already; wait then waits for the reconcile of the edit.
//
// Waiting for synced fails at once on a ResourceFailed event that schedules
// no retry: a permanent error, or retries used up. It does not fail on a
// Failed or Error state it reads, which may predate an edit made just
// before wait ran (the fix of a broken file) or lag behind the event that
// prompted the read; a resource that stays failed times out.
func (c *cli) wait(ctx context.Context, cmd *command) error {
	var (
		condition string
		timeout   time.Duration
	)
	cmd.fs.StringVar(&condition, "for", "synced", "the condition: synced, error, failed or deleted")
	cmd.fs.DurationVar(&timeout, "timeout", 30*time.Second, "how long to wait")
	if err := cmd.parse(); err != nil {
		return err
	}
	kind, namespace, name, err := cmd.resource(false)
	if err != nil {
		return err
	}
	want, ok := conditions[strings.ToLower(condition)]
	if !ok {
		return usagef("--for must be synced, error, failed or deleted, not %q", condition)
	}
	if timeout <= 0 {
		return usagef("--timeout must be positive, not %s", timeout)
	}
	cl, err := cmd.client(c.http)
	if err != nil {
		return err
	}
	ref := kind.Ref(namespace, name)
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()

	// state is what was last read: nil while the resource does not exist;
	// stale says its Synced is of an older definition than the one in force.
	var (
		state *types.Reconcile
		stale bool
	)
	timedOut := func() error {
		now := "it does not exist"
		if state != nil {
			now = "it is " + state.State
			if stale {
				now += " with an earlier definition than the one in force"
			}
			if state.LastError != "" {
				now += ": " + state.LastError
			}
		}
		return fmt.Errorf("timed out after %s waiting for %s to be %s; %s", timeout, ref, want, now)
	}
	failure := func(err error) error {
		switch {
		case errors.Is(err, context.DeadlineExceeded):
			return timedOut()
		case errors.Is(err, context.Canceled):
			return fmt.Errorf("interrupted while waiting for %s to be %s", ref, want)
		}
		return err
	}

	stream, err := cl.Events(ctx, types.EventFilter{Kind: kind.Name, Namespace: namespace, Name: name})
	if err != nil {
		return failure(err)
	}
	defer stream.Close()
	for {
		o, err := cl.Get(ctx, kind.Plural, namespace, name)
		switch {
		case client.IsNotFound(err):
			state = nil
		case err != nil:
			return failure(err)
		default:
			state = &o.Reconcile
			stale = state.State == string(statusync.StateSynced) && state.ObservedHash != "" && o.Metadata.Hash != "" &&
				state.ObservedHash != o.Metadata.Hash
		}
		if state == nil && want == "deleted" || state != nil && state.State == want && !(want == string(statusync.StateSynced) && stale) {
			fmt.Fprintf(c.stdout, "%s is %s\n", ref, want)
			return nil
		}
		ev, err := stream.Next()
		switch failed, ok := ev.Event.(events.ResourceFailed); {
		case errors.Is(err, io.EOF):
			return fmt.Errorf("the daemon ended the event stream while waiting for %s to be %s", ref, want)
		case err != nil:
			return failure(err)
		case ok && want == string(statusync.StateSynced) && failed.Permanent:
			return fmt.Errorf("%s is in Error with no retry scheduled: %s", ref, failed.Error)
		case ok && want == string(statusync.StateSynced) && !failed.WillRetry():
			return fmt.Errorf("%s is Failed, its retries used up: %s", ref, failed.Error)
		}
	}
}
