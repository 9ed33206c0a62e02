package main

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"go.yaml.in/yaml/v3"
	human "k8s.io/apimachinery/pkg/util/duration"

	"github.com/musterd/musterd/pkg/api/client"
	"github.com/musterd/musterd/pkg/api/types"
	"github.com/musterd/musterd/pkg/apis/muster/v1alpha1"
)

// none is shown for an empty value, as kubectl does.
const none = "<none>"

// get lists resources or shows one.
func (c *cli) get(ctx context.Context, cmd *command) error {
	var output string
	cmd.fs.StringVar(&output, "o", "table", "output format: table, json or yaml")
	cmd.fs.StringVar(&output, "output", "table", "same as -o")
	var execFlags executionFlags
	execFlags.register(cmd)
	if err := cmd.parse(); err != nil {
		return err
	}
	if output != "table" && output != "json" && output != "yaml" {
		return usagef("-o must be table, json or yaml, not %q", output)
	}
	if id, ok := executionArgs(cmd.args); ok { // cli_executions.go
		return c.getExecutions(ctx, cmd, id, output, execFlags)
	}
	kind, namespace, name, err := cmd.resource(true)
	if err != nil {
		return err
	}
	cl, err := cmd.client(c.http)
	if err != nil {
		return err
	}
	if name != "" {
		o, err := cl.Get(ctx, kind.Plural, namespace, name)
		if err != nil {
			return err
		}
		if output == "table" {
			return c.printTable(kind, []types.Object{o}, false, false)
		}
		return c.printDocument(output, o)
	}
	items, err := cl.List(ctx, kind.Plural, cmd.namespace)
	if err != nil {
		return err
	}
	switch {
	case output != "table":
		return c.printDocument(output, types.List{Items: items})
	case len(items) == 0:
		fmt.Fprintln(c.stderr, "No resources found.")
		return nil
	case kind.Name != "":
		return c.printTable(kind, items, cmd.namespace == "", false)
	}
	// Every kind: one table per kind that has resources, names prefixed
	// with their kind as with kubectl get all.
	first := true
	for _, k := range types.Kinds() {
		var ofKind []types.Object
		for _, o := range items {
			if o.Kind == k.Name {
				ofKind = append(ofKind, o)
			}
		}
		if len(ofKind) == 0 {
			continue
		}
		if !first {
			fmt.Fprintln(c.stdout)
		}
		first = false
		if err := c.printTable(k, ofKind, cmd.namespace == "", true); err != nil {
			return err
		}
	}
	return nil
}

// column is one column of a table.
type column struct {
	header string
	cell   func(types.Object) string
}

// printTable prints objects of kind as a table: NAMESPACE (if
// withNamespace), NAME (kind/name if withKind), the kind's own columns
// (the CRD's printer columns), then STATE and LAST RECONCILE (how long
// ago).
func (c *cli) printTable(kind types.Kind, objects []types.Object, withNamespace, withKind bool) error {
	var cols []column
	if withNamespace {
		cols = append(cols, column{"NAMESPACE", func(o types.Object) string { return o.Metadata.Namespace }})
	}
	cols = append(cols, column{"NAME", func(o types.Object) string {
		if withKind {
			return kind.Singular + "/" + o.Metadata.Name
		}
		return o.Metadata.Name
	}})
	switch kind.Name {
	case v1alpha1.KindMCPServer:
		cols = append(cols,
			column{"TYPE", func(o types.Object) string {
				var spec v1alpha1.MCPServerSpec
				return field(o.Spec, &spec, func() string { return string(spec.Type) })
			}},
			column{"SERVER", func(o types.Object) string {
				var st v1alpha1.MCPServerStatus
				return field(o.Status, &st, func() string { return string(st.State) })
			}})
	case v1alpha1.KindWorkflow:
		cols = append(cols,
			column{"VALID", func(o types.Object) string {
				var st v1alpha1.WorkflowStatus
				return field(o.Status, &st, func() string { return strconv.FormatBool(st.Valid) })
			}},
			column{"STEPS", func(o types.Object) string {
				var st v1alpha1.WorkflowStatus
				return field(o.Status, &st, func() string { return strconv.Itoa(st.StepCount) })
			}})
	}
	cols = append(cols,
		column{"STATE", func(o types.Object) string {
			if o.Reconcile.Note != "" { // "reconciliation disabled"
				return o.Reconcile.State + " (" + o.Reconcile.Note + ")"
			}
			return o.Reconcile.State
		}},
		column{"LAST RECONCILE", func(o types.Object) string { return ago(o.Reconcile.LastReconcileTime) }})

	tw := tabwriter.NewWriter(c.stdout, 0, 8, 3, ' ', 0)
	row := make([]string, len(cols))
	for i, col := range cols {
		row[i] = col.header
	}
	fmt.Fprintln(tw, strings.Join(row, "\t"))
	for _, o := range objects {
		for i, col := range cols {
			row[i] = col.cell(o)
		}
		fmt.Fprintln(tw, strings.Join(row, "\t"))
	}
	return tw.Flush()
}

// field decodes raw into v and returns show(), or none if raw is absent or
// not what v expects.
func field(raw json.RawMessage, v any, show func() string) string {
	if len(raw) == 0 || json.Unmarshal(raw, v) != nil {
		return none
	}
	return cmp.Or(show(), none)
}

// ago says how long ago t was, as kubectl's AGE column does.
func ago(t *time.Time) string {
	if t == nil {
		return none
	}
	return human.HumanDuration(time.Since(*t))
}

// printDocument prints v as indented JSON or as YAML.
func (c *cli) printDocument(format string, v any) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false) // errors quote <none> and the like
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return err
	}
	if format == "json" {
		_, err := c.stdout.Write(buf.Bytes())
		return err
	}
	out, err := jsonToYAML(buf.Bytes())
	if err != nil {
		return err
	}
	_, err = c.stdout.Write(out)
	return err
}

// jsonToYAML re-encodes a JSON document as block YAML, keeping its field
// order and quoting only where a plain scalar would read back differently.
func jsonToYAML(data []byte) ([]byte, error) {
	var tree yaml.Node
	if err := yaml.Unmarshal(data, &tree); err != nil {
		return nil, err
	}
	var plain func(*yaml.Node)
	plain = func(n *yaml.Node) {
		n.Style = 0
		for _, c := range n.Content {
			plain(c)
		}
	}
	plain(&tree)
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(&tree); err != nil {
		return nil, err
	}
	if err := enc.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// describe shows one resource in detail.
func (c *cli) describe(ctx context.Context, cmd *command) error {
	var follow bool
	cmd.fs.BoolVar(&follow, "events", false, "after the recent events, follow new ones until interrupted")
	if err := cmd.parse(); err != nil {
		return err
	}
	if id, ok := executionArgs(cmd.args); ok { // cli_executions.go
		return c.describeExecution(ctx, cmd, id)
	}
	kind, namespace, name, err := cmd.resource(false)
	if err != nil {
		return err
	}
	cl, err := cmd.client(c.http)
	if err != nil {
		return err
	}
	var stream *client.EventStream
	if follow {
		// Subscribed before the state is read: no later event is missed.
		if stream, err = cl.Events(ctx, types.EventFilter{Kind: kind.Name, Namespace: namespace, Name: name}); err != nil {
			return err
		}
		defer stream.Close()
	}
	o, err := cl.Get(ctx, kind.Plural, namespace, name)
	if err != nil {
		return err
	}
	recent, err := cl.Recent(ctx, kind.Plural, namespace, name)
	// A daemon with a token shows its events only to the token's holders;
	// the rest of the description is for anyone.
	eventsNeedToken := client.IsUnauthorized(err)
	if err != nil && !eventsNeedToken {
		return err
	}
	if err := c.printDescription(o); err != nil {
		return err
	}
	if eventsNeedToken {
		_, err := fmt.Fprintln(c.stdout, "Events:       <the daemon's API token is needed: -token or $"+envToken+">")
		return err
	}
	// The daemon keeps each resource's latest events; those that also
	// reach the stream, subscribed first, are printed once.
	if len(recent) == 0 && stream == nil {
		_, err := fmt.Fprintln(c.stdout, "Events:       "+none)
		return err
	}
	fmt.Fprintln(c.stdout, "Events:")
	seen := map[string]bool{}
	for _, ev := range recent {
		fmt.Fprintln(c.stdout, eventLine(ev))
		seen[string(ev.Data)] = true
	}
	if stream == nil {
		return nil
	}
	return c.printEvents(stream, seen)
}

// printDescription prints o as kubectl describe would.
func (c *cli) printDescription(o types.Object) error {
	var b strings.Builder
	line := func(indent, width int, label, value string) {
		prefix := strings.Repeat(" ", indent) + fmt.Sprintf("%-*s", width, label+":")
		lines := strings.Split(value, "\n")
		for i, l := range lines {
			if i > 0 {
				prefix = strings.Repeat(" ", indent+width)
			}
			b.WriteString(strings.TrimRight(prefix+l, " ") + "\n")
		}
	}
	top := func(label, value string) { line(0, 14, label, value) }
	top("Name", o.Metadata.Name)
	top("Namespace", o.Metadata.Namespace)
	top("Kind", o.Kind)
	top("API Version", o.APIVersion)
	top("Labels", pairs(o.Metadata.Labels))
	top("Annotations", pairs(o.Metadata.Annotations))
	top("Files", cmp.Or(strings.Join(o.Files, "\n"), none))
	for _, section := range []struct {
		label string
		raw   json.RawMessage
	}{{"Spec", o.Spec}, {"Status", o.Status}} {
		if len(section.raw) == 0 {
			top(section.label, none)
			continue
		}
		out, err := jsonToYAML(section.raw)
		if err != nil {
			return err
		}
		b.WriteString(section.label + ":\n")
		for l := range strings.Lines(string(out)) {
			b.WriteString("  " + l)
		}
	}
	r := o.Reconcile
	b.WriteString("Reconcile:\n")
	sub := func(label, value string) { line(2, 17, label, value) }
	sub("State", r.State)
	if r.Note != "" {
		sub("Note", r.Note)
	}
	sub("Last Reconcile", when(r.LastReconcileTime))
	sub("Last Error", cmp.Or(r.LastError, none))
	sub("Retry Count", strconv.Itoa(r.RetryCount))
	sub("Next Retry", when(r.NextRetry))
	sub("Correlation ID", cmp.Or(r.CorrelationID, none))
	_, err := io.WriteString(c.stdout, b.String())
	return err
}

// pairs shows a map as key=value lines, sorted.
func pairs(m map[string]string) string {
	if len(m) == 0 {
		return none
	}
	var lines []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		lines = append(lines, k+"="+m[k])
	}
	return strings.Join(lines, "\n")
}

// when shows a time and how long ago (or from now) it is.
func when(t *time.Time) string {
	if t == nil {
		return none
	}
	d := time.Since(*t)
	if d < 0 {
		return fmt.Sprintf("%s (in %s)", t.UTC().Format(time.RFC3339), human.HumanDuration(-d))
	}
	return fmt.Sprintf("%s (%s ago)", t.UTC().Format(time.RFC3339), human.HumanDuration(d))
}
