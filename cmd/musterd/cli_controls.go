package main

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/musterd/musterd/pkg/api/types"
)

// The operators' controls on the command line: each a call of the API's
// control routes, which need the token when the daemon has one.

// service starts, stops or restarts one MCP server: musterd start NAME.
func serviceCommand(action string) func(*cli, context.Context, *command) error {
	return func(c *cli, ctx context.Context, cmd *command) error {
		var reason string
		cmd.fs.StringVar(&reason, "reason", "", "why, shown in the server's status and events")
		if err := cmd.parse(); err != nil {
			return err
		}
		if len(cmd.args) != 1 {
			return usagef("name one MCP server")
		}
		name := strings.TrimPrefix(cmd.args[0], "mcpservers/")
		cl, err := cmd.client(c.http)
		if err != nil {
			return err
		}
		res, err := cl.Service(ctx, cmd.namespace, name, action, reason)
		if err != nil {
			return err
		}
		switch {
		case res.Unchanged:
			fmt.Fprintf(c.stdout, "mcpserver %s: already %s (state %s)\n", name, pastTense(action), res.State)
		case res.Failed():
			return fmt.Errorf("mcpserver %s: %s failed (correlation %s, state %s, consecutive failures %d): %s", name, action, res.CorrelationID, res.State, res.ConsecutiveFailures, res.Error)
		case !res.Reconciled:
			fmt.Fprintf(c.stdout, "mcpserver %s: %s recorded, not reconciled yet (correlation %s, state %s)\n", name, action, res.CorrelationID, res.State)
		default:
			fmt.Fprintf(c.stdout, "mcpserver %s: %s (correlation %s, state %s)\n", name, pastTense(action), res.CorrelationID, res.State)
		}
		return nil
	}
}

func pastTense(action string) string {
	switch action {
	case "stop":
		return "stopped"
	case "start":
		return "started"
	}
	return action + "ed"
}

// toggle enables or disables a kind's reconciliation: musterd disable KIND.
func toggleCommand(enable bool) func(*cli, context.Context, *command) error {
	return func(c *cli, ctx context.Context, cmd *command) error {
		if err := cmd.parse(); err != nil {
			return err
		}
		if len(cmd.args) != 1 {
			return usagef("name one kind: mcpservers or workflows")
		}
		kind, err := types.ResolveKind(cmd.args[0])
		if err != nil {
			return usageError{err.Error()}
		}
		cl, err := cmd.client(c.http)
		if err != nil {
			return err
		}
		k, err := cl.SetKindEnabled(ctx, kind.Plural, enable)
		if err != nil {
			return err
		}
		state := "enabled"
		if !k.Enabled {
			state = "disabled"
		}
		fmt.Fprintf(c.stdout, "%s: reconciliation %s (%d resources)\n", kind.Plural, state, k.Resources)
		return nil
	}
}

// resync asks for a full reconcile: musterd resync [KIND].
func (c *cli) resync(ctx context.Context, cmd *command) error {
	if err := cmd.parse(); err != nil {
		return err
	}
	kind := ""
	switch len(cmd.args) {
	case 0:
	case 1:
		k, err := types.ResolveKind(cmd.args[0])
		if err != nil {
			return usageError{err.Error()}
		}
		kind = k.Plural
	default:
		return usagef("unexpected argument %q", cmd.args[1])
	}
	cl, err := cmd.client(c.http)
	if err != nil {
		return err
	}
	res, err := cl.Resync(ctx, kind)
	if err != nil {
		return err
	}
	fmt.Fprintf(c.stdout, "resync of %s: %d keys triggered (correlation %s)\n", strings.Join(res.Kinds, ", "), res.Keys, res.CorrelationID)
	if len(res.Skipped) > 0 {
		fmt.Fprintf(c.stdout, "skipped, reconciliation disabled: %s\n", strings.Join(res.Skipped, ", "))
	}
	return nil
}

// status prints the daemon's overview: musterd status.
func (c *cli) status(ctx context.Context, cmd *command) error {
	if err := cmd.parse(); err != nil {
		return err
	}
	if len(cmd.args) > 0 {
		return usagef("unexpected argument %q", cmd.args[0])
	}
	cl, err := cmd.client(c.http)
	if err != nil {
		return err
	}
	o, err := cl.Overview(ctx)
	if err != nil {
		return err
	}
	var b strings.Builder
	line := func(label, value string) { fmt.Fprintf(&b, "%-20s %s\n", label+":", value) }
	line("Mode", o.Mode)
	role := o.Role
	if o.Leader != "" {
		role += " (leader: " + o.Leader + ")"
	}
	line("Role", role)
	var kinds []string
	for _, k := range o.Kinds {
		s := fmt.Sprintf("%s enabled (%d)", k.Kind, k.Resources)
		if !k.Enabled {
			s = fmt.Sprintf("%s %s (%d)", k.Kind, k.Note, k.Resources)
		}
		kinds = append(kinds, s)
	}
	line("Kinds", strings.Join(kinds, ", "))
	line("Queue depth", fmt.Sprint(o.QueueDepth))
	line("Resources", counts(o.Resources))
	line("Servers", counts(o.Servers))
	if len(o.StoppedByOperator) > 0 {
		line("Stopped by operator", strings.Join(o.StoppedByOperator, ", "))
	}
	last := none
	if o.LastFullResync != nil {
		last = o.LastFullResync.UTC().Format(time.RFC3339)
	}
	line("Last full resync", last)
	line("Tools", fmt.Sprint(o.Tools))
	_, err = fmt.Fprint(c.stdout, b.String())
	return err
}

// counts shows state counts as "Running=2 Stopped=1", sorted.
func counts(m map[string]int) string {
	if len(m) == 0 {
		return none
	}
	var parts []string
	for k, v := range m {
		parts = append(parts, fmt.Sprintf("%s=%d", k, v))
	}
	slices.Sort(parts)
	return strings.Join(parts, " ")
}
