package main

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/musterd/musterd/pkg/api/client"
	"github.com/musterd/musterd/pkg/api/types"
	"github.com/musterd/musterd/pkg/events"
)

// Environment variables of the client commands.
const (
	envServer     = "MUSTERD_SERVER"
	envToken      = "MUSTERD_TOKEN"
	defaultServer = "http://127.0.0.1:8090"
)

// clientCommands are the subcommands that talk to a daemon's API.
var clientCommands = map[string]struct {
	synopsis string
	run      func(*cli, context.Context, *command) error
}{
	"get":       {"musterd get [KIND [NAME]] [-n NAMESPACE] [-o table|json|yaml]\n       musterd get executions [ID] [--workflow NAME] [--status STATUS] [--limit N] [--offset N] [-o table|json|yaml]", (*cli).get},
	"describe":  {"musterd describe KIND/NAME [-n NAMESPACE] [--events]\n       musterd describe execution/ID", (*cli).describe},
	"reconcile": {"musterd reconcile KIND/NAME [-n NAMESPACE]", (*cli).reconcile},
	"events":    {"musterd events [-f | --for DURATION] [--kind KIND] [-n NAMESPACE] [--name NAME] [--type TYPE,…]", (*cli).events},
	"wait":      {"musterd wait KIND/NAME [-n NAMESPACE] [--for synced|error|failed|deleted] [--timeout DURATION]", (*cli).wait},
	"start":     {"musterd start NAME [-n NAMESPACE] [--reason TEXT]", serviceCommand("start")},
	"stop":      {"musterd stop NAME [-n NAMESPACE] [--reason TEXT]", serviceCommand("stop")},
	"restart":   {"musterd restart NAME [-n NAMESPACE] [--reason TEXT]", serviceCommand("restart")},
	"enable":    {"musterd enable KIND", toggleCommand(true)},
	"disable":   {"musterd disable KIND", toggleCommand(false)},
	"resync":    {"musterd resync [KIND]", (*cli).resync},
	"status":    {"musterd status", (*cli).status},
}

// runClient runs a client subcommand until it is done or interrupted.
func runClient(name string, args []string, stdout, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	c := &cli{stdout: stdout, stderr: stderr, getenv: os.Getenv, http: &http.Client{}}
	return c.run(ctx, name, args)
}

// cli runs the client subcommands in one environment; tests give it their
// own.
type cli struct {
	stdout, stderr io.Writer
	getenv         func(string) string
	http           *http.Client
}

// usageError is a mistake on the command line: exit code 2.
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error { return usageError{fmt.Sprintf(format, args...)} }

// errFlags says the flag package rejected the flags and has said why.
var errFlags = errors.New("invalid flags")

// run runs the client subcommand name and returns the exit code: 0 on
// success, 1 on failure (a resource not found, a wait that timed out or
// failed, an unreachable server), 2 on a usage error.
func (c *cli) run(ctx context.Context, name string, args []string) int {
	sub := clientCommands[name]
	cmd := &command{args: args, fs: flag.NewFlagSet("musterd "+name, flag.ContinueOnError)}
	cmd.fs.SetOutput(c.stderr)
	cmd.fs.Usage = func() {
		fmt.Fprintf(c.stderr, "Usage: %s\n\nFlags:\n", sub.synopsis)
		cmd.fs.PrintDefaults()
	}
	cmd.fs.StringVar(&cmd.server, "server", cmp.Or(c.getenv(envServer), defaultServer), "address of musterd's API (env "+envServer+")")
	cmd.fs.StringVar(&cmd.token, "token", c.getenv(envToken), "bearer token, needed by reconcile when the daemon has one (env "+envToken+")")
	nsUsage := "namespace (default " + events.DefaultNamespace + ")"
	if name == "get" || name == "events" {
		nsUsage = "namespace (default: every namespace)"
	}
	cmd.fs.StringVar(&cmd.namespace, "n", "", nsUsage)
	cmd.fs.StringVar(&cmd.namespace, "namespace", "", "same as -n")

	err := sub.run(c, ctx, cmd)
	var usage usageError
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
		return 0
	case errors.Is(err, errFlags):
		return 2
	case errors.As(err, &usage):
		fmt.Fprintf(c.stderr, "musterd %s: %s\nRun \"musterd %s -h\" for usage.\n", name, usage.msg, name)
		return 2
	}
	fmt.Fprintln(c.stderr, "musterd:", err)
	return 1
}

// command is one run of a subcommand: its flags and arguments.
type command struct {
	fs                       *flag.FlagSet
	server, token, namespace string
	// args are the command line's arguments; after parse, only the
	// positional ones.
	args []string
}

// parse parses the flags, which may come before, between or after the
// positional arguments, as with kubectl; "--" ends them.
func (cmd *command) parse() error {
	args := cmd.args
	cmd.args = nil
	for {
		if err := cmd.fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return err
			}
			return errFlags
		}
		rest := cmd.fs.Args()
		if len(rest) == 0 {
			return nil
		}
		if n := len(args) - len(rest); n > 0 && args[n-1] == "--" {
			cmd.args = append(cmd.args, rest...)
			return nil
		}
		cmd.args = append(cmd.args, rest[0])
		args = rest[1:]
	}
}

// client returns a client of the server the flags name.
func (cmd *command) client(hc *http.Client) (*client.Client, error) {
	cl, err := client.New(cmd.server, cmd.token, hc)
	if err != nil {
		return nil, usageError{"--server: " + err.Error()}
	}
	return cl, nil
}

// resource reads the resource the arguments name, KIND/NAME or KIND NAME,
// in the namespace of -n or the default one. With optionalName, KIND alone
// or nothing at all is allowed too.
func (cmd *command) resource(optionalName bool) (kind types.Kind, namespace, name string, err error) {
	args := cmd.args
	if len(args) == 1 {
		if k, n, ok := strings.Cut(args[0], "/"); ok {
			if n == "" || strings.Contains(n, "/") {
				return kind, "", "", usagef("invalid resource %q: want KIND/NAME", args[0])
			}
			args = []string{k, n}
		}
	}
	switch {
	case len(args) > 2:
		return kind, "", "", usagef("unexpected argument %q", args[2])
	case len(args) < 2 && !optionalName:
		return kind, "", "", usagef("name a resource: KIND/NAME or KIND NAME")
	case len(args) == 0:
		return kind, "", "", nil
	}
	if kind, err = types.ResolveKind(args[0]); err != nil {
		return kind, "", "", usageError{err.Error()}
	}
	if len(args) == 2 {
		name, namespace = args[1], cmp.Or(cmd.namespace, events.DefaultNamespace)
	}
	return kind, namespace, name, nil
}

// reconcile triggers a reconcile of one resource.
func (c *cli) reconcile(ctx context.Context, cmd *command) error {
	if err := cmd.parse(); err != nil {
		return err
	}
	kind, namespace, name, err := cmd.resource(false)
	if err != nil {
		return err
	}
	cl, err := cmd.client(c.http)
	if err != nil {
		return err
	}
	if _, err := cl.Reconcile(ctx, kind.Plural, namespace, name); err != nil {
		return err
	}
	fmt.Fprintf(c.stdout, "%s: reconcile triggered\n", kind.Ref(namespace, name))
	return nil
}
