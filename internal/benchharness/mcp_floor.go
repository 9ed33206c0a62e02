package main

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// sdkProxyEnv, set to an mcp-fake's path in the harness's environment,
// makes the harness's binary the bare go-sdk gateway of
// sdk_proxy_process_call_*: it spawns that mcp-fake, serves
// sdkProxyHandler on a loopback port, prints the address on stdout and
// serves until its stdin closes. It is set only for the child the measure
// starts, before any flag is parsed.
const sdkProxyEnv = "BENCHHARNESS_SDK_PROXY_FAKE"

func init() {
	fake := os.Getenv(sdkProxyEnv)
	if fake == "" {
		return
	}
	if err := serveSDKProxy(fake); err != nil {
		fmt.Fprintln(os.Stderr, "benchharness: bare SDK proxy:", err)
		os.Exit(1)
	}
	os.Exit(0)
}

func serveSDKProxy(fake string) error {
	client := mcp.NewClient(&mcp.Implementation{Name: "bare-proxy", Version: "v1"}, nil)
	backend, err := client.Connect(context.Background(), &mcp.CommandTransport{Command: exec.Command(fake, "-tools", "echo")}, nil)
	if err != nil {
		return fmt.Errorf("spawn %s: %w", fake, err)
	}
	defer backend.Close()
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: sdkProxyHandler(backend), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(listener) }()
	defer srv.Close()
	fmt.Println(listener.Addr().String())
	// The parent holds our stdin: its end (or the parent's) ends us.
	_, _ = bufio.NewReader(os.Stdin).ReadString(0)
	return nil
}

// startSDKProxyProcess starts this binary as the bare go-sdk gateway
// (sdkProxyEnv) and returns a client session on it.
func startSDKProxyProcess() (*mcp.ClientSession, func(), error) {
	self, err := os.Executable()
	if err != nil {
		return nil, nil, err
	}
	fake, err := filepath.Abs(*mcpFake)
	if err != nil {
		return nil, nil, err
	}
	cmd := exec.Command(self)
	cmd.Env = append(os.Environ(), sdkProxyEnv+"="+fake)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, nil, err
	}
	stop := func() { _ = stdin.Close(); _ = cmd.Wait() }
	addr, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		stop()
		return nil, nil, fmt.Errorf("bare SDK proxy process: no address: %w", err)
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "benchharness", Version: "v1"}, nil)
	cs, err := client.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: "http://" + strings.TrimSpace(addr), HTTPClient: &http.Client{}}, nil)
	if err != nil {
		stop()
		return nil, nil, fmt.Errorf("connect to the bare SDK proxy process: %w", err)
	}
	return cs, func() { _ = cs.Close(); stop() }, nil
}
