package apitest

import (
	"context"
	"net"
	"net/http"
	"sync"
	"testing"
)

// Serve serves h over an in-memory network until the test's cleanup, and
// returns the server's base URL and a client that reaches it.
func Serve(t testing.TB, h http.Handler) (string, *http.Client) {
	t.Helper()
	ln := &pipeListener{conns: make(chan net.Conn), closed: make(chan struct{})}
	srv := &http.Server{Handler: h}
	served := make(chan struct{})
	go func() {
		defer close(served)
		_ = srv.Serve(ln)
	}()
	transport := &http.Transport{DialContext: ln.dial}
	t.Cleanup(func() {
		transport.CloseIdleConnections()
		_ = srv.Close() // closes the listener and every connection
		<-served
	})
	return "http://" + ln.Addr().String(), &http.Client{Transport: transport}
}

// pipeListener hands out the server ends of net.Pipe connections.
type pipeListener struct {
	conns     chan net.Conn
	closed    chan struct{}
	closeOnce sync.Once
}

func (l *pipeListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.closed:
		return nil, net.ErrClosed
	}
}

func (l *pipeListener) Close() error {
	l.closeOnce.Do(func() { close(l.closed) })
	return nil
}

func (l *pipeListener) Addr() net.Addr { return pipeAddr{} }

func (l *pipeListener) dial(ctx context.Context, _, _ string) (net.Conn, error) {
	server, client := net.Pipe()
	select {
	case l.conns <- server:
		return client, nil
	case <-l.closed:
		return nil, net.ErrClosed
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

type pipeAddr struct{}

func (pipeAddr) Network() string { return "pipe" }
func (pipeAddr) String() string  { return "musterd.test" }
