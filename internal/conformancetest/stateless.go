package conformancetest

import (
	"net"
	"net/http"
	"os"
	"os/exec"
	"testing"
	"time"
)

// ServeStatelessHTTP runs bin, the everything-server, over stateless
// streamable HTTP (its default, and the only way the go-sdk serves
// 2026-07-28 over HTTP) on a free loopback port until t ends, and returns
// its MCP URL once it accepts connections.
func ServeStatelessHTTP(t testing.TB, bin string) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	_ = l.Close()
	cmd := exec.Command(bin, "-http="+addr, "-stateless=true")
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	url := "http://" + addr + "/mcp"
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := http.Get(url)
		if err == nil {
			_ = resp.Body.Close()
			return url
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s did not serve %s within 30s: %v", bin, url, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
