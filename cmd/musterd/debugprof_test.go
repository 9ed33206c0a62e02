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
	// No heap dump: its format is the runtime's own, undocumented, and
	// read only with a copy of one Go release's size classes.
	for path, want := range map[string]int{"/debug/pprof/heap": 200, "/debug/pprof/goroutine": 200, "/debug/pprof/nothing": 404, "/debug/pprof/heapdump": 404, "/other": 404} {
		rec := httptest.NewRecorder()
		serveProfile(rec, httptest.NewRequest(http.MethodGet, path, nil))
		if rec.Code != want {
			t.Errorf("%s: status %d, want %d", path, rec.Code, want)
		}
	}
}
