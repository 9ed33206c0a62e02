package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/musterd/musterd/pkg/coordinator"
	"github.com/musterd/musterd/pkg/debouncer"
	"github.com/musterd/musterd/pkg/lifecycle"
	"github.com/musterd/musterd/pkg/pipeline"
)

// daemonFlags are musterd run's flags.
type daemonFlags struct {
	configDir   string
	listen      string
	allowRemote bool
	logLevel    slog.Level
	logFormat   string
	debounce    time.Duration
	workers     int
	resync      time.Duration
	stopTimeout time.Duration
}

func parseDaemonFlags(args []string, stderr io.Writer) (daemonFlags, error) {
	var f daemonFlags
	fs := flag.NewFlagSet("musterd run", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&f.configDir, "config-dir", defaultConfigDir(), "directory holding mcpservers/ and workflows/")
	fs.StringVar(&f.listen, "listen", "127.0.0.1:8090", "address of the HTTP API and metrics; loopback unless -allow-remote")
	fs.BoolVar(&f.allowRemote, "allow-remote", false, "allow -listen on a non-loopback address")
	fs.TextVar(&f.logLevel, "log-level", slog.LevelInfo, "debug, info, warn or error")
	fs.StringVar(&f.logFormat, "log-format", "text", "text or json")
	fs.DurationVar(&f.debounce, "debounce", debouncer.DefaultInterval, "refractory period per resource")
	fs.IntVar(&f.workers, "workers", 2, "concurrent reconciles")
	fs.DurationVar(&f.resync, "resync", 10*time.Minute, "period of the full level-triggered resync")
	fs.DurationVar(&f.stopTimeout, "stop-timeout", 10*time.Second, "time allowed for a clean shutdown")
	if err := fs.Parse(args); err != nil {
		return f, err
	}
	if fs.NArg() > 0 {
		return f, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	if f.logFormat != "text" && f.logFormat != "json" {
		return f, fmt.Errorf("-log-format must be text or json, not %q", f.logFormat)
	}
	if err := checkListen(f.listen, f.allowRemote); err != nil {
		return f, err
	}
	return f, nil
}

func defaultConfigDir() string {
	if dir, err := os.UserConfigDir(); err == nil {
		return dir + "/muster"
	}
	return "."
}

// checkListen keeps the API on loopback unless the operator says otherwise.
func checkListen(addr string, allowRemote bool) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("-listen %q: %w", addr, err)
	}
	if allowRemote {
		return nil
	}
	// A name is trusted only if every address it resolves to is loopback:
	// "localhost" can be mapped elsewhere.
	var ips []net.IP
	if ip := net.ParseIP(host); ip != nil {
		ips = []net.IP{ip}
	} else if host != "" {
		ips, _ = net.LookupIP(host)
	}
	if len(ips) == 0 {
		return fmt.Errorf("-listen %q is not a loopback address; pass -allow-remote to expose the API", addr)
	}
	for _, ip := range ips {
		if !ip.IsLoopback() {
			return fmt.Errorf("-listen %q resolves to %s, not a loopback address; pass -allow-remote to expose the API", addr, ip)
		}
	}
	return nil
}

func runDaemon(args []string, stderr io.Writer) int {
	f, err := parseDaemonFlags(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintln(stderr, "musterd:", err)
		return 2
	}
	log := newLogger(stderr, f)

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	if err := serve(ctx, f, log); err != nil {
		log.Error("musterd stopped", "error", err)
		return 1
	}
	log.Info("musterd stopped")
	return 0
}

func newLogger(w io.Writer, f daemonFlags) *slog.Logger {
	opts := &slog.HandlerOptions{Level: f.logLevel}
	if f.logFormat == "json" {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}

// serve runs the pipeline and the HTTP server until ctx is done or one of
// them fails.
func serve(ctx context.Context, f daemonFlags, log *slog.Logger) error {
	p, err := pipeline.New(pipeline.Options{
		Logger:    log,
		Debouncer: debouncer.Options{Interval: f.debounce},
		Coordinator: coordinator.Options{
			Workers:      f.workers,
			ResyncPeriod: f.resync,
		},
		Lifecycle: lifecycle.Options{StopTimeout: f.stopTimeout},
	})
	if err != nil {
		return err
	}

	ln, err := net.Listen("tcp", f.listen)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", f.listen, err)
	}
	srv := &http.Server{Handler: newAPI(p), ReadHeaderTimeout: 5 * time.Second}
	log.Info("musterd starting", "version", version, "config_dir", f.configDir, "listen", ln.Addr().String())
	// Watchers of the config dir and the real reconcilers are wired here as
	// they arrive (filesystem mode: issue 3; reconcilers: issue 4).

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	serveErr := make(chan error, 1)
	go func() {
		if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
			serveErr <- err
			cancel()
		}
		close(serveErr)
	}()

	runErr := p.Run(ctx)
	shutdownCtx, done := context.WithTimeout(context.Background(), 5*time.Second)
	defer done()
	_ = srv.Shutdown(shutdownCtx)
	return errors.Join(runErr, <-serveErr)
}
