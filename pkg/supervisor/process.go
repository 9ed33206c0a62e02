package supervisor

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"
	"unicode"

	"github.com/musterd/musterd/pkg/apis/muster/v1alpha1"
)

// stderrSettle bounds the wait for a dead server's stderr to reach EOF. Every
// process of its group is gone by then, so only a process that left the
// group (setsid) can hold stderr open; past this, the pipe is closed under
// it.
const stderrSettle = 500 * time.Millisecond

// process is the process of a stdio server, with everything it starts in a
// group of its own (group_unix.go: a process group it leads;
// group_windows.go: a job object). The supervisor talks MCP over pipes of
// its own making (not exec.Cmd's), so that reaping the process never closes
// a pipe that the MCP session still reads.
type process struct {
	pid     int
	group   processGroup
	stdin   io.WriteCloser // write end: the server's stdin
	stdout  io.ReadCloser  // read end: the server's stdout
	stderrR io.Closer      // read end: the server's stderr, copied into stderr
	stderr  *tailBuffer

	exited     chan struct{} // closed once the process is reaped; exit is set then
	exit       string        // how it ended, as describeExit says
	stderrDone chan struct{} // closed once stderr is copied to EOF (or cut off)

	stopOnce sync.Once
	killed   bool // stop had to kill: the process outlived its grace
}

// processGroup is what stop and kill do to a server and every process it
// started: a mechanism per system (group_unix.go, group_windows.go).
type processGroup interface {
	// terminate asks every process of the group to stop.
	terminate()
	// kill kills every process left in the group.
	kill()
	// release frees what the group holds, once the process is reaped and
	// killed; kill does nothing after it.
	release()
}

// starter starts the process of a stdio server: startProcess, which a unit
// test of the supervisor may replace with a fake (Supervisor.startProc).
type starter func(spec v1alpha1.MCPServerSpec, tail int, inheritEnv bool) (*process, error)

// startProcess starts spec's command, exec'd directly (no shell), with args
// and env (on top of all of musterd's if inheritEnv), in a new group.
func startProcess(spec v1alpha1.MCPServerSpec, tail int, inheritEnv bool) (*process, error) {
	cmd := exec.Command(spec.Command, spec.Args...)
	cmd.Env = processEnv(spec.Env, inheritEnv)
	cmd.SysProcAttr = sysProcAttr()

	var parentEnds, childEnds []*os.File
	closeAll := func(files []*os.File) {
		for _, f := range files {
			_ = f.Close()
		}
	}
	pipe := func() (r, w *os.File, err error) {
		if r, w, err = os.Pipe(); err != nil {
			closeAll(parentEnds)
			closeAll(childEnds)
		}
		return r, w, err
	}
	stdinR, stdinW, err := pipe()
	if err != nil {
		return nil, err
	}
	parentEnds, childEnds = append(parentEnds, stdinW), append(childEnds, stdinR)
	stdoutR, stdoutW, err := pipe()
	if err != nil {
		return nil, err
	}
	parentEnds, childEnds = append(parentEnds, stdoutR), append(childEnds, stdoutW)
	stderrR, stderrW, err := pipe()
	if err != nil {
		return nil, err
	}
	parentEnds, childEnds = append(parentEnds, stderrR), append(childEnds, stderrW)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = stdinR, stdoutW, stderrW

	err = cmd.Start()
	closeAll(childEnds) // the child has its copies; ours would keep EOF away
	if err != nil {
		closeAll(parentEnds)
		return nil, err
	}
	grp, err := newGroup(cmd.Process)
	if err != nil {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		closeAll(parentEnds)
		return nil, err
	}
	return newProcess(cmd.Process.Pid, grp, stdinW, stdoutR, stderrR, tail, func() string {
		_ = cmd.Wait() // its error says no more than ProcessState
		return describeExit(cmd.ProcessState)
	}), nil
}

// newProcess tracks a started process: it copies stderr into a tail of
// tail bytes, and closes exited once wait, which returns when the process
// is reaped, has said how it ended.
func newProcess(pid int, group processGroup, stdin io.WriteCloser, stdout, stderr io.ReadCloser, tail int, wait func() string) *process {
	p := &process{
		pid:        pid,
		group:      group,
		stdin:      stdin,
		stdout:     stdout,
		stderrR:    stderr,
		stderr:     newTailBuffer(tail),
		exited:     make(chan struct{}),
		stderrDone: make(chan struct{}),
	}
	go func() {
		_, _ = io.Copy(p.stderr, stderr)
		close(p.stderrDone)
	}()
	go func() {
		p.exit = wait()
		close(p.exited)
	}()
	return p
}

// hasExited reports whether the process has been reaped.
func (p *process) hasExited() bool {
	select {
	case <-p.exited:
		return true
	default:
		return false
	}
}

// awaitExit waits up to d for the process to exit by itself.
func (p *process) awaitExit(d time.Duration) bool {
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-p.exited:
		return true
	case <-timer.C:
		return false
	}
}

// stop ends the group and returns once the process is reaped and its
// stderr read: asks the group to stop (group.terminate) and gives the
// process up to grace to exit, then kills whatever is left of the group
// (the process itself, or children it left behind). A grace of zero kills
// at once. Only the first call acts; later ones wait for it.
func (p *process) stop(grace time.Duration) {
	p.stopOnce.Do(func() {
		if grace > 0 && !p.hasExited() {
			p.group.terminate()
			p.killed = !p.awaitExit(grace)
		}
		p.group.kill()
		<-p.exited
		p.group.release()
		select {
		case <-p.stderrDone:
		case <-time.After(stderrSettle):
			_ = p.stderrR.Close()
			<-p.stderrDone
		}
		_ = p.stdin.Close()
		_ = p.stdout.Close()
		_ = p.stderrR.Close()
	})
}

// kill kills the group at once, for a caller out of patience. It does
// nothing once the process is reaped.
func (p *process) kill() {
	if !p.hasExited() {
		p.group.kill()
	}
}

// describeExit says how a reaped process ended.
func describeExit(state *os.ProcessState) string {
	if ws, ok := state.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return fmt.Sprintf("was killed by signal %d (%s)", int(ws.Signal()), ws.Signal())
	}
	return fmt.Sprintf("exited with exit code %d", state.ExitCode())
}

// stderrSeparator comes between a failure and the stderr tail that follows
// it on the next lines.
const stderrSeparator = "; stderr:"

// withStderr appends a stderr tail to a message, when there is one.
func withStderr(msg, tail string) string {
	if tail == "" {
		return msg
	}
	return msg + stderrSeparator + "\n" + tail
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	mu        sync.Mutex
	buf       []byte
	max       int
	truncated bool // bytes were dropped from the front
}

func newTailBuffer(max int) *tailBuffer {
	return &tailBuffer{buf: make([]byte, 0, max), max: max}
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := len(p)
	if len(p) >= t.max {
		t.truncated = t.truncated || len(t.buf) > 0 || len(p) > t.max
		t.buf = append(t.buf[:0], p[len(p)-t.max:]...)
		return n, nil
	}
	if over := len(t.buf) + len(p) - t.max; over > 0 {
		t.buf = t.buf[:copy(t.buf, t.buf[over:])]
		t.truncated = true
	}
	t.buf = append(t.buf, p...)
	return n, nil
}

// Tail returns the kept bytes as text, unredacted. When bytes were dropped
// it starts at the next whole line (or word), so that it never begins in
// the middle of a "key=value" whose key, cut short, would no longer look
// secret to redaction.
func (t *tailBuffer) Tail() string {
	t.mu.Lock()
	b := bytes.Clone(t.buf)
	truncated := t.truncated
	t.mu.Unlock()
	if truncated {
		if i := bytes.IndexByte(b, '\n'); i >= 0 {
			b = b[i+1:]
		} else if i := bytes.IndexFunc(b, unicode.IsSpace); i >= 0 {
			b = b[i+1:]
		} else {
			b = nil
		}
	}
	return strings.TrimSpace(strings.ToValidUTF8(string(b), "�"))
}
