package main

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/musterd/musterd/pkg/api/types"
)

// executionNames are the names "get" and "describe" accept for workflow
// executions, which are records, not declared resources.
var executionNames = map[string]bool{"executions": true, "execution": true, "exec": true, "workflow-execution": true, "workflow-executions": true}

// executionArgs reports whether args name executions, and the id when
// one is named (execution/ID or execution ID).
func executionArgs(args []string) (id string, ok bool) {
	if len(args) == 0 {
		return "", false
	}
	first, rest, hasSlash := strings.Cut(args[0], "/")
	if !executionNames[strings.ToLower(first)] {
		return "", false
	}
	switch {
	case hasSlash:
		return rest, true
	case len(args) > 1:
		return args[1], true
	}
	return "", true
}

// executionFlags are get's flags for executions.
type executionFlags struct {
	workflow, status string
	limit, offset    int
}

func (f *executionFlags) register(cmd *command) {
	cmd.fs.StringVar(&f.workflow, "workflow", "", "executions only: those of this workflow")
	cmd.fs.StringVar(&f.status, "status", "", "executions only: inprogress, completed or failed")
	cmd.fs.IntVar(&f.limit, "limit", types.DefaultExecutionLimit, "executions only: how many, newest first (1 to 1000)")
	cmd.fs.IntVar(&f.offset, "offset", 0, "executions only: how many of the newest to skip")
}

// getExecutions lists executions, or shows one.
func (c *cli) getExecutions(ctx context.Context, cmd *command, id, output string, f executionFlags) error {
	cl, err := cmd.client(c.http)
	if err != nil {
		return err
	}
	if id != "" {
		exec, err := cl.Execution(ctx, id)
		if err != nil {
			return err
		}
		if output == "table" {
			return c.printExecutions([]types.ExecutionSummary{summaryOf(exec)})
		}
		return c.printDocument(output, exec)
	}
	// The limit is always sent, the flag's default being the daemon's: a
	// -limit 0 is the daemon's error, not a page of the default size.
	list, err := cl.Executions(ctx, types.ExecutionQuery{Workflow: f.workflow, Status: f.status, Limit: new(f.limit), Offset: f.offset})
	if err != nil {
		return err
	}
	switch {
	case output != "table":
		return c.printDocument(output, list)
	case len(list.Executions) == 0:
		fmt.Fprintln(c.stderr, "No executions found.")
		return nil
	}
	if err := c.printExecutions(list.Executions); err != nil {
		return err
	}
	if list.HasMore {
		fmt.Fprintf(c.stderr, "%d of %d shown; -offset %d for more.\n", len(list.Executions), list.Total, list.Offset+len(list.Executions))
	}
	return nil
}

func summaryOf(e types.Execution) types.ExecutionSummary {
	return types.ExecutionSummary{ExecutionID: e.ExecutionID, WorkflowName: e.WorkflowName, Status: e.Status,
		StartedAt: e.StartedAt, CompletedAt: e.CompletedAt, DurationMs: e.DurationMs, StepCount: len(e.Steps), Error: e.Error}
}

func (c *cli) printExecutions(list []types.ExecutionSummary) error {
	tw := tabwriter.NewWriter(c.stdout, 0, 8, 3, ' ', 0)
	fmt.Fprintln(tw, "EXECUTION\tWORKFLOW\tSTATUS\tSTEPS\tSTARTED\tDURATION\tERROR")
	for _, e := range list {
		errText := none
		if e.Error != nil {
			errText = oneLine(*e.Error, 60)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%s\t%s\n", e.ExecutionID, e.WorkflowName, e.Status, e.StepCount,
			ago(&e.StartedAt), execDuration(e), errText)
	}
	return tw.Flush()
}

func execDuration(e types.ExecutionSummary) string {
	if e.Status == types.ExecutionInProgress {
		return none
	}
	return (time.Duration(e.DurationMs) * time.Millisecond).String()
}

// oneLine shortens s to one line of at most n runes.
func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}

// describeExecution shows one execution: what ran, each step, the result.
func (c *cli) describeExecution(ctx context.Context, cmd *command, id string) error {
	if id == "" {
		return usagef("name an execution: execution/ID")
	}
	cl, err := cmd.client(c.http)
	if err != nil {
		return err
	}
	e, err := cl.Execution(ctx, id)
	if err != nil {
		return err
	}
	var b strings.Builder
	top := func(label, value string) { fmt.Fprintf(&b, "%-14s%s\n", label+":", value) }
	top("Execution", e.ExecutionID)
	top("Workflow", e.WorkflowName)
	top("Status", e.Status)
	top("Started", when(&e.StartedAt))
	top("Completed", when(e.CompletedAt))
	top("Duration", execDuration(summaryOf(e)))
	top("Error", cmp.Or(deref(e.Error), none))
	if e.Truncated {
		top("Truncated", "true: inputs or results larger than the record's bound were replaced")
	}
	if err := c.writeYAMLSection(&b, "Input", e.Input); err != nil {
		return err
	}
	if len(e.Steps) == 0 {
		top("Steps", none)
	} else {
		b.WriteString("Steps:\n")
		tw := tabwriter.NewWriter(&b, 0, 8, 3, ' ', 0)
		fmt.Fprintln(tw, "  ID\tTOOL\tSTATUS\tDURATION\tERROR")
		for _, s := range e.Steps {
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\n", s.StepID, cmp.Or(s.Tool, none), s.Status,
				(time.Duration(s.DurationMs) * time.Millisecond).String(), cmp.Or(oneLine(deref(s.Error), 80), none))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	if e.Result == nil {
		top("Result", none)
	} else if err := c.writeYAMLSection(&b, "Result", e.Result); err != nil {
		return err
	}
	_, err = io.WriteString(c.stdout, b.String())
	return err
}

func (c *cli) writeYAMLSection(b *strings.Builder, label string, v any) error {
	var doc strings.Builder
	saved := c.stdout
	c.stdout = &doc
	err := c.printDocument("yaml", v)
	c.stdout = saved
	if err != nil {
		return err
	}
	b.WriteString(label + ":\n")
	for l := range strings.Lines(doc.String()) {
		b.WriteString("  " + l)
	}
	return nil
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
