package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/musterd/musterd/pkg/eventtrace"
	"github.com/musterd/musterd/pkg/eventtrace/replay"
)

const replaySynopsis = "musterd replay FILE [--stages debouncer,coordinator,statusync] [--debounce DURATION] [--diff GOLDEN]"

const replayHelp = `Replays an event trace recorded by "musterd run --record" through the
pipeline's stages, on a virtual clock, and prints the events they emit in
the trace format: the same bytes, for the same trace and stages, as the
golden files of pkg/eventtrace/replay. Two replays of one trace are identical.

The recorded input events (file, service-state and manual changes, index
syncs) are fed at their recorded offsets, and the recorded events of the
stages not chosen in their place. The command has no reconcilers of its
own: the coordinator replays the reconcile outcomes the trace recorded
(Synced, or Failed and when it was retried) for each resource in turn.

With --diff, it prints the difference between its output and GOLDEN
instead, and exits 1 if there is one.

`

// stageNames are the stages --stages may name, in pipeline order.
var stageNames = []string{"debouncer", "coordinator", "statusync"}

// runReplay runs "musterd replay" and returns the exit code: 0 on success,
// 1 if the trace cannot be read or replayed or differs from the golden
// file, 2 on a usage error.
func runReplay(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("musterd replay", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: %s\n\n%sFlags:\n", replaySynopsis, replayHelp)
		fs.PrintDefaults()
	}
	stages := fs.String("stages", strings.Join(stageNames, ","), "the stages to run, comma-separated: "+strings.Join(stageNames, ", "))
	golden := fs.String("diff", "", "print the diff against this golden file instead of the events; exit 1 if they differ")
	debounce := fs.Duration("debounce", 0, "replay with this debounce interval instead of the trace header's")
	// The file may come before the flags, as in the synopsis.
	var file string
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		file, args = args[0], args[1:]
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	rest := fs.Args()
	if file == "" && len(rest) > 0 {
		file, rest = rest[0], rest[1:]
	}
	if file == "" || len(rest) > 0 {
		fmt.Fprintf(stderr, "musterd replay: want one trace file, got %q\nRun \"musterd replay -h\" for usage.\n", append(nonEmpty(file), rest...))
		return 2
	}
	opts, err := replayStages(*stages)
	if err != nil {
		fmt.Fprintf(stderr, "musterd replay: --stages: %v\nRun \"musterd replay -h\" for usage.\n", err)
		return 2
	}
	if *debounce < 0 {
		fmt.Fprintf(stderr, "musterd replay: --debounce %s: must not be negative\n", *debounce)
		return 2
	}

	tr, err := eventtrace.ReadFile(file)
	switch {
	case errors.Is(err, eventtrace.ErrTruncated):
		// A recording cut off mid-line (a killed daemon) replays up to
		// the cut.
		fmt.Fprintf(stderr, "musterd replay: warning: %v; replaying the %d events before it\n", err, len(tr.Entries))
	case err != nil:
		fmt.Fprintf(stderr, "musterd replay: %v\n", err)
		return 1
	}
	if *debounce > 0 {
		tr.Header.Config.Debounce = eventtrace.Duration(*debounce)
	}
	got, err := replay.ReplayStepped(tr, opts)
	if err != nil {
		fmt.Fprintf(stderr, "musterd replay: %s: %v\n", file, err)
		return 1
	}
	out, err := replay.Encode(got)
	if err != nil {
		fmt.Fprintf(stderr, "musterd replay: %s: %v\n", file, err)
		return 1
	}
	if *golden == "" {
		if _, err := stdout.Write(out); err != nil {
			fmt.Fprintf(stderr, "musterd replay: %v\n", err)
			return 1
		}
		return 0
	}
	want, err := os.ReadFile(*golden)
	if err != nil {
		fmt.Fprintf(stderr, "musterd replay: --diff: %v\n", err)
		return 1
	}
	if diff := replay.Diff(want, out); diff != "" {
		fmt.Fprint(stdout, diff)
		fmt.Fprintf(stderr, "musterd replay: the replay of %s differs from %s\n", file, *golden)
		return 1
	}
	return 0
}

// replayStages parses --stages.
func replayStages(list string) (replay.Options, error) {
	var opts replay.Options
	for name := range strings.SplitSeq(list, ",") {
		switch name = strings.TrimSpace(name); name {
		case "debouncer":
			opts.Debouncer = true
		case "coordinator":
			opts.Coordinator = true
		case "statusync":
			opts.StatusSync = true
		case "":
		default:
			return opts, fmt.Errorf("unknown stage %q (want %s)", name, strings.Join(stageNames, ", "))
		}
	}
	if !opts.Debouncer && !opts.Coordinator && !opts.StatusSync {
		return opts, errors.New("no stage named")
	}
	return opts, nil
}

func nonEmpty(s string) []string {
	if s == "" {
		return nil
	}
	return []string{s}
}
