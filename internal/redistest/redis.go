package redistest

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/musterd/musterd/internal/logtest"
	"github.com/musterd/musterd/internal/testca"
)

const (
	// BinEnv names a redis-server binary to run instead of the one on PATH.
	BinEnv = "MUSTERD_REDIS_BIN"
	// RequireEnv, set to 1, makes a missing redis-server fail the test
	// instead of skipping it.
	RequireEnv = "MUSTERD_REQUIRE_REDIS"
)

// Options configures [StartWith].
type Options struct {
	// Password makes the server require it (--requirepass). Default: none.
	Password string
	// TLS makes the server speak TLS only, with a certificate for
	// 127.0.0.1 from a CA made for this server alone ([Redis.CAFile],
	// [Redis.TLSConfig]); clients present no certificate. Default: plain
	// TCP.
	TLS bool
	// StartTimeout bounds the wait for the first PONG. Default: 10 s.
	StartTimeout time.Duration
}

// Redis is a running redis-server.
type Redis struct {
	// Addr is the server's loopback address, 127.0.0.1:PORT.
	Addr string
	// Password is the one the server requires; empty when none.
	Password string
	// Dir is the server's working directory, in the test's temporary
	// directory.
	Dir string
	// LogFile is the server's output of its latest start.
	LogFile string
	// CAFile is the PEM file of the CA that signed the server's
	// certificate, and CAPool holds that CA; empty without TLS.
	CAFile string
	CAPool *x509.CertPool

	certs *testca.CA

	bin     string
	timeout time.Duration
	starts  int

	mu   sync.Mutex
	stop func() // kills the running server and waits; nil when stopped
}

// Start runs a redis-server without a password for the test and stops it at
// t.Cleanup. It skips t, or fails it under MUSTERD_REQUIRE_REDIS=1, when
// there is no redis-server.
func Start(t testing.TB) *Redis {
	t.Helper()
	return StartWith(t, Options{})
}

// StartWith is [Start] with options.
func StartWith(t testing.TB, opts Options) *Redis {
	t.Helper()
	bin := Binary(t)
	if opts.StartTimeout <= 0 {
		opts.StartTimeout = 10 * time.Second
	}
	r := &Redis{Password: opts.Password, Dir: t.TempDir(), bin: bin, timeout: opts.StartTimeout}
	t.Cleanup(r.Stop)
	if opts.TLS {
		c, err := testca.Write(r.Dir, "redistest CA")
		if err != nil {
			t.Fatalf("redistest: %v", err)
		}
		r.certs, r.CAFile, r.CAPool = c, c.CAFile, c.Pool
	}

	// A free port is chosen and closed before redis-server binds it, so
	// another process may take it in between: the server then exits, and
	// Start tries again on another port.
	var lastErr error
	for attempt := 0; attempt < 3; attempt++ {
		port, err := freePort()
		if err != nil {
			t.Fatalf("redistest: %v", err)
		}
		r.Addr = net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
		exited, err := r.run()
		if err == nil {
			return r
		}
		lastErr = err
		if !exited || !strings.Contains(logtest.Tail(r.LogFile, 20), "Address already in use") {
			break
		}
	}
	t.Fatalf("redistest: %v\n%s", lastErr, logtest.Tail(r.LogFile, 20))
	return nil
}

// URL returns the server's address as a redis:// URL (rediss:// with
// TLS), without the password.
func (r *Redis) URL() string {
	if r.certs != nil {
		return "rediss://" + r.Addr
	}
	return "redis://" + r.Addr
}

// Stop kills the server and waits for it to exit. Its data is gone (there
// is no persistence). Stopping a stopped server does nothing.
func (r *Redis) Stop() {
	r.mu.Lock()
	stop := r.stop
	r.stop = nil
	r.mu.Unlock()
	if stop != nil {
		stop()
	}
}

// Restart stops the server and starts a new one on the same address with
// the same password. The new server starts empty. It fails t when the
// server does not answer in time.
func (r *Redis) Restart(t testing.TB) {
	t.Helper()
	r.Stop()
	if _, err := r.run(); err != nil {
		t.Fatalf("redistest: restart: %v\n%s", err, logtest.Tail(r.LogFile, 20))
	}
}

// run starts redis-server on r.Addr and waits until it answers PING.
// exited tells whether the server stopped by itself before that.
func (r *Redis) run() (exited bool, err error) {
	r.starts++
	r.LogFile = filepath.Join(r.Dir, fmt.Sprintf("redis-%d.log", r.starts))
	logf, err := os.Create(r.LogFile)
	if err != nil {
		return false, err
	}
	_, port, _ := net.SplitHostPort(r.Addr)
	args := []string{
		"--port", port, "--bind", "127.0.0.1", "--protected-mode", "yes",
		"--save", "", "--appendonly", "no", "--dir", r.Dir,
		"--daemonize", "no", "--logfile", "",
	}
	if c := r.certs; c != nil {
		args[1] = "0" // no plain port
		args = append(args, "--tls-port", port, "--tls-cert-file", c.CertFile, "--tls-key-file", c.KeyFile,
			"--tls-ca-cert-file", c.CAFile, "--tls-auth-clients", "no")
	}
	if r.Password != "" {
		args = append(args, "--requirepass", r.Password)
	}
	cmd := exec.Command(r.bin, args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		logf.Close()
		return false, fmt.Errorf("start %s: %w", r.bin, err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait(); logf.Close() }()
	stop := func() {
		_ = cmd.Process.Kill()
		<-done
	}

	deadline := time.Now().Add(r.timeout)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	var pingErr error
	for {
		if pingErr = r.ping(); pingErr == nil {
			r.mu.Lock()
			r.stop = stop
			r.mu.Unlock()
			return false, nil
		}
		select {
		case err := <-done:
			return true, fmt.Errorf("redis-server exited before answering at %s: %v", r.Addr, err)
		case <-tick.C:
		}
		if time.Now().After(deadline) {
			stop()
			return false, fmt.Errorf("redis-server did not answer PING at %s within %v: %v", r.Addr, r.timeout, pingErr)
		}
	}
}

// ping sends AUTH (with a password) and PING in Redis's wire protocol and
// wants +OK and +PONG back.
func (r *Redis) ping() error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	conn, err := r.dial(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(2 * time.Second))
	rd := bufio.NewReader(conn)
	if r.Password != "" {
		if err := roundTrip(conn, rd, "+OK", "AUTH", r.Password); err != nil {
			return fmt.Errorf("AUTH: %w", err)
		}
	}
	return roundTrip(conn, rd, "+PONG", "PING")
}

func roundTrip(conn net.Conn, rd *bufio.Reader, want string, args ...string) error {
	got, err := send(conn, rd, args...)
	if err != nil {
		return err
	}
	if got != want {
		return fmt.Errorf("answered %q, want %q", got, want)
	}
	return nil
}

// send writes one command as an array of bulk strings and reads the first
// line of the reply.
func send(conn net.Conn, rd *bufio.Reader, args ...string) (string, error) {
	var b strings.Builder
	fmt.Fprintf(&b, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
	}
	if _, err := conn.Write([]byte(b.String())); err != nil {
		return "", err
	}
	line, err := rd.ReadString('\n')
	return strings.TrimRight(line, "\r\n"), err
}

// Binary returns the redis-server to run: MUSTERD_REDIS_BIN when set, else
// the one on PATH. When there is none it skips t, or fails it under
// MUSTERD_REQUIRE_REDIS=1.
func Binary(t testing.TB) string {
	t.Helper()
	bin, err := find()
	if err != nil {
		if os.Getenv(RequireEnv) == "1" {
			t.Fatal("redistest: " + err.Error() + "; " + RequireEnv + "=1 makes this a failure")
		}
		t.Skip("redistest: " + err.Error())
	}
	return bin
}

func find() (string, error) {
	if bin := os.Getenv(BinEnv); bin != "" {
		if _, err := os.Stat(bin); err != nil {
			return "", fmt.Errorf("no redis-server at %s (%s)", bin, BinEnv)
		}
		return bin, nil
	}
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		return "", errors.New("no redis-server on PATH; run `make redis` to install Debian's (or set " + BinEnv + ")")
	}
	return bin, nil
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// Do sends one command to the server (after AUTH when it has a password)
// and returns its first reply line, e.g. "+OK", ":1", "$5". It is for
// checking the server from a test without a client library.
func (r *Redis) Do(ctx context.Context, args ...string) (string, error) {
	conn, err := r.dial(ctx)
	if err != nil {
		return "", err
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
	rd := bufio.NewReader(conn)
	if r.Password != "" {
		if err := roundTrip(conn, rd, "+OK", "AUTH", r.Password); err != nil {
			return "", fmt.Errorf("AUTH: %w", err)
		}
	}
	return send(conn, rd, args...)
}

// dial connects to the server, through TLS when it speaks TLS.
func (r *Redis) dial(ctx context.Context) (net.Conn, error) {
	if cfg := r.TLSConfig(); cfg != nil {
		return (&tls.Dialer{Config: cfg}).DialContext(ctx, "tcp", r.Addr)
	}
	var d net.Dialer
	return d.DialContext(ctx, "tcp", r.Addr)
}
