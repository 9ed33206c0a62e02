package main

// Profiling switches for a developer measuring the daemon (its cold start
// and its memory above all), off unless the environment names them:
//
//   - MUSTERD_DEBUG_PPROF=127.0.0.1:6060 serves runtime/pprof's profiles
//     (/debug/pprof/heap, allocs, goroutine, …, and profile?seconds=N for
//     CPU) on that address, which must be loopback: a profile shows what
//     the process holds.
//   - MUSTERD_DEBUG_CPUPROFILE=file writes a CPU profile from the start of
//     the process until it stops, so that a cold start is profiled from
//     its first instant.
//   - MUSTERD_DEBUG_TRACE=file writes a runtime/trace execution trace from
//     the start of the process until it stops: where a cold start waits
//     (go tool trace -pprof=sched|syscall|sync FILE) when its CPU profile
//     does not account for its wall time.
//
// runtime/pprof, not net/http/pprof: that one registers on the default mux
// and brings in html/template for its index page; this one adds almost
// nothing to the binary.

import (
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"runtime"
	"runtime/pprof"
	"runtime/trace"
	"strconv"
	"strings"
	"time"
)

const (
	envDebugPprof      = "MUSTERD_DEBUG_PPROF"
	envDebugCPUProfile = "MUSTERD_DEBUG_CPUPROFILE"
	envDebugTrace      = "MUSTERD_DEBUG_TRACE"
)

// startDebugProfiling starts what the environment asks for and returns
// what stops it; a switch that cannot be honoured is an error, not a
// silent no-op.
func startDebugProfiling(log *slog.Logger) (stop func(), err error) {
	var stops []func()
	stop = func() {
		for _, s := range stops {
			s()
		}
	}
	for _, w := range []struct {
		env, what   string
		start       func(io.Writer) error
		stopWriting func()
	}{
		{envDebugCPUProfile, "a CPU profile", pprof.StartCPUProfile, pprof.StopCPUProfile},
		{envDebugTrace, "an execution trace", trace.Start, trace.Stop},
	} {
		file := os.Getenv(w.env)
		if file == "" {
			continue
		}
		f, err := os.Create(file)
		if err != nil {
			return stop, fmt.Errorf("$%s: %w", w.env, err)
		}
		if err := w.start(f); err != nil {
			f.Close()
			return stop, fmt.Errorf("$%s: %w", w.env, err)
		}
		log.Info("writing "+w.what+" until the daemon stops", "file", file)
		stops = append(stops, func() { w.stopWriting(); f.Close() })
	}
	if addr := os.Getenv(envDebugPprof); addr != "" {
		host, _, err := net.SplitHostPort(addr)
		if err != nil {
			return stop, fmt.Errorf("$%s: %w", envDebugPprof, err)
		}
		if why := nonLoopback(host); why != "" {
			return stop, fmt.Errorf("$%s %q %s; profiles are served on loopback only", envDebugPprof, addr, why)
		}
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			return stop, fmt.Errorf("$%s: %w", envDebugPprof, err)
		}
		srv := &http.Server{Handler: http.HandlerFunc(serveProfile), ReadHeaderTimeout: 5 * time.Second}
		go func() { _ = srv.Serve(ln) }()
		log.Info("serving profiles", "address", ln.Addr().String())
		stops = append(stops, func() { _ = srv.Close() })
	}
	return stop, nil
}

// serveProfile writes /debug/pprof/NAME: a CPU profile of ?seconds=N (30
// if not given) for "profile", else the named runtime profile, as of the
// last collection for heap and allocs (?gc=1 collects first), in text with
// ?debug=1.
func serveProfile(w http.ResponseWriter, r *http.Request) {
	name, ok := strings.CutPrefix(r.URL.Path, "/debug/pprof/")
	if !ok {
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	if name == "profile" {
		secs, err := strconv.Atoi(r.URL.Query().Get("seconds"))
		if err != nil || secs <= 0 {
			secs = 30
		}
		if err := pprof.StartCPUProfile(w); err != nil {
			http.Error(w, err.Error(), http.StatusConflict)
			return
		}
		select {
		case <-time.After(time.Duration(secs) * time.Second):
		case <-r.Context().Done():
		}
		pprof.StopCPUProfile()
		return
	}
	p := pprof.Lookup(name)
	if p == nil {
		http.NotFound(w, r)
		return
	}
	if r.URL.Query().Get("gc") == "1" {
		runtime.GC()
	}
	debug, _ := strconv.Atoi(r.URL.Query().Get("debug")) // 1: text, with the runtime's memory statistics
	if debug > 0 {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	}
	_ = p.WriteTo(w, debug) // an error here is the client gone
}
