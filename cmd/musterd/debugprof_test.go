package main

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestDebugProfilingIsOffUnlessAskedAndServesOnLoopbackOnly(t *testing.T) {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	t.Setenv(envDebugPprof, "")
	t.Setenv(envDebugCPUProfile, "")
	stop, err := startDebugProfiling(log)
	if err != nil {
		t.Fatal(err)
	}
	stop()

	t.Setenv(envDebugPprof, "0.0.0.0:0")
	if _, err := startDebugProfiling(log); err == nil || !strings.Contains(err.Error(), "loopback only") {
		t.Fatalf("a non-loopback address: got %v, want a refusal", err)
	}

	t.Setenv(envDebugPprof, "127.0.0.1:0")
	file, traceFile := filepath.Join(t.TempDir(), "cpu.prof"), filepath.Join(t.TempDir(), "exec.trace")
	t.Setenv(envDebugCPUProfile, file)
	t.Setenv(envDebugTrace, traceFile)
	stop, err = startDebugProfiling(log)
	if err != nil {
		t.Fatal(err)
	}
	stop()
	if info, err := os.Stat(file); err != nil || info.Size() == 0 {
		t.Fatalf("the CPU profile: %v, %v", info, err)
	}
	if info, err := os.Stat(traceFile); err != nil || info.Size() == 0 {
		t.Fatalf("the execution trace: %v, %v", info, err)
	}
}

func TestServeProfileWritesANamedProfile(t *testing.T) {
	for path, want := range map[string]int{"/debug/pprof/heap": 200, "/debug/pprof/goroutine": 200, "/debug/pprof/nothing": 404, "/other": 404} {
		rec := httptest.NewRecorder()
		serveProfile(rec, httptest.NewRequest(http.MethodGet, path, nil))
		if rec.Code != want {
			t.Errorf("%s: status %d, want %d", path, rec.Code, want)
		}
	}
	rec := httptest.NewRecorder()
	serveProfile(rec, httptest.NewRequest(http.MethodGet, "/debug/pprof/heapdump", nil))
	if rec.Code != 200 || !strings.HasPrefix(rec.Body.String(), "go1.7 heap dump\n") {
		t.Errorf("heapdump: status %d, %d bytes beginning %.20q", rec.Code, rec.Body.Len(), rec.Body.String())
	}
}
