// Command tracegen records the trace corpus of testdata/traces from real
// runs of the musterd binary: for each scenario it writes a config dir,
// starts `musterd run -record`, drives the scenario through the files, and
// stops musterd with SIGTERM. See testdata/traces/README.md.
//
//	go build -o /tmp/musterd ./cmd/musterd
//	go build -o /tmp/bin/mcp-fake ./cmd/mcp-fake
//	go run ./internal/tracegen -musterd /tmp/musterd -mcp-fake /tmp/bin/mcp-fake -out testdata/traces [-only NAME]
package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"log"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// scenario is one recording.
type scenario struct {
	name string
	args []string // extra musterd flags
	// drive changes the config dir while musterd runs, then returns how
	// long to keep recording.
	drive func(g *gen) time.Duration
}

var scenarios = []scenario{
	{name: "burst-10k", drive: func(g *gen) time.Duration {
		g.write("workflows/burst.yaml", workflow("burst", "version 0"))
		time.Sleep(time.Second)
		for i := 1; i <= 10_000; i++ {
			g.write("workflows/burst.yaml", workflow("burst", fmt.Sprintf("version %d", i)))
		}
		return 2 * time.Second
	}},
	{name: "create-1000", drive: func(g *gen) time.Duration {
		for i := range 1000 {
			g.write(fmt.Sprintf("workflows/wf-%04d.yaml", i), workflow(fmt.Sprintf("wf-%04d", i), "one of many"))
		}
		return 3 * time.Second
	}},
	{name: "delete-recreate", drive: func(g *gen) time.Duration {
		g.write("mcpservers/echo.yaml", server("echo", g.mcpFake, `["-tools", "echo"]`))
		time.Sleep(2 * time.Second)
		g.remove("mcpservers/echo.yaml")
		time.Sleep(50 * time.Millisecond)
		g.write("mcpservers/echo.yaml", server("echo", g.mcpFake, `["-tools", "echo"]`))
		return 2 * time.Second
	}},
	{name: "malformed-fix", drive: func(g *gen) time.Duration {
		g.write("workflows/greet.yaml", workflow("greet", "first"))
		time.Sleep(time.Second)
		g.write("workflows/greet.yaml", "apiVersion: muster.giantswarm.io/v1alpha1\nkind: Workflow\nmetadata: [this is not\n")
		time.Sleep(time.Second)
		g.write("workflows/greet.yaml", workflow("greet", "fixed"))
		return 2 * time.Second
	}},
	{name: "crash-loop", drive: func(g *gen) time.Duration {
		g.write("mcpservers/crashy.yaml", server("crashy", g.mcpFake, `["-exit-at-once"]`))
		return 20 * time.Second
	}},
	{name: "resync", args: []string{"-resync", "2s"}, drive: func(g *gen) time.Duration {
		g.write("workflows/a.yaml", workflow("a", "resynced"))
		g.write("workflows/b.yaml", workflow("b", "resynced"))
		g.write("mcpservers/echo.yaml", server("echo", g.mcpFake, `["-tools", "echo"]`))
		return 7 * time.Second
	}},
}

func workflow(name, description string) string {
	return fmt.Sprintf(`apiVersion: muster.giantswarm.io/v1alpha1
kind: Workflow
metadata:
  name: %s
spec:
  description: %q
  steps:
    - id: say
      tool: x_echo_echo
      args:
        message: hello
`, name, description)
}

func server(name, command, args string) string {
	return fmt.Sprintf(`apiVersion: muster.giantswarm.io/v1alpha1
kind: MCPServer
metadata:
  name: %s
spec:
  type: stdio
  autoStart: true
  command: %s
  args: %s
`, name, command, args)
}

// gen is one recording in progress.
type gen struct {
	dir     string // config dir
	mcpFake string
}

func (g *gen) write(rel, content string) {
	path := filepath.Join(g.dir, rel)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		log.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		log.Fatal(err)
	}
}

func (g *gen) remove(rel string) {
	if err := os.Remove(filepath.Join(g.dir, rel)); err != nil {
		log.Fatal(err)
	}
}

func main() {
	musterd := flag.String("musterd", "/tmp/musterd", "the musterd binary")
	mcpFake := flag.String("mcp-fake", "/tmp/bin/mcp-fake", "the mcp-fake binary (absolute path)")
	out := flag.String("out", "testdata/traces", "where the traces go")
	only := flag.String("only", "", "record only this scenario")
	flag.Parse()
	for _, s := range scenarios {
		if *only != "" && s.name != *only {
			continue
		}
		if err := record(s, *musterd, *mcpFake, *out); err != nil {
			log.Fatalf("%s: %v", s.name, err)
		}
	}
}

func record(s scenario, musterd, mcpFake, out string) error {
	tmp, err := os.MkdirTemp("", "tracegen-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	g := &gen{dir: filepath.Join(tmp, "config"), mcpFake: mcpFake}
	for _, d := range []string{"mcpservers", "workflows"} {
		if err := os.MkdirAll(filepath.Join(g.dir, d), 0o755); err != nil {
			return err
		}
	}
	tracePath, err := filepath.Abs(filepath.Join(out, s.name+".trace"))
	if err != nil {
		return err
	}
	args := append([]string{"run", "-config-dir", g.dir, "-state-dir", filepath.Join(tmp, "state"),
		"-record", tracePath, "-debounce", "100ms", "-listen", "127.0.0.1:0", "-log-level", "warn"}, s.args...)
	cmd := exec.Command(musterd, args...)
	cmd.Dir = tmp
	var logs bytes.Buffer
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		return err
	}
	// The config dir starts empty, so the start-up sync has nothing to
	// reconcile and the scenario's changes come after it.
	if err := waitFor(tracePath, `"type":"IndexSynchronized"`, 10*time.Second); err != nil {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		return fmt.Errorf("%w\n%s", err, logs.String())
	}
	time.Sleep(500 * time.Millisecond)
	started := time.Now()
	time.Sleep(s.drive(g))
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		return err
	}
	if err := cmd.Wait(); err != nil {
		return fmt.Errorf("musterd: %w\n%s", err, logs.String())
	}
	info, err := os.Stat(tracePath)
	if err != nil {
		return err
	}
	log.Printf("%s: %d bytes, %s recorded after start-up", s.name, info.Size(), time.Since(started).Round(time.Millisecond))
	return nil
}

// waitFor waits until the file at path holds want.
func waitFor(path, want string, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		if data, err := os.ReadFile(path); err == nil && strings.Contains(string(data), want) {
			return nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	return errors.New("musterd did not record its start-up sync in time")
}
