package main

import (
	"context"
	"flag"
	"os"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// exitLocked is the exit code of a server that found its -exclusive lock
// held: another process of the same server still ran.
const exitLocked = 5

// supervisionFlags are the flags that check how musterd's supervisor
// treats a server, kept apart from the others.
type supervisionFlags struct {
	exclusive string
	hangAfter time.Duration
	lock      *os.File // kept referenced, so that no finalizer closes it
}

var supervision supervisionFlags

func (f *supervisionFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.exclusive, "exclusive", "", "take an exclusive lock on this file for the life of the process; exit 5 at once if another process holds it")
	fs.DurationVar(&f.hangAfter, "hang-after", 0, "this long after the start, stop answering any request (stay alive, keep connections open): a hung server")
}

// instrument makes server hang as the flags ask.
func (f *supervisionFlags) instrument(server *mcp.Server) {
	if f.hangAfter <= 0 {
		return
	}
	hangAt := time.Now().Add(f.hangAfter)
	var once sync.Once
	server.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if time.Now().Before(hangAt) {
				return next(ctx, method, req)
			}
			once.Do(func() { logf("hanging as asked: answering nothing from now on") })
			<-ctx.Done() // until the client gives up on this request, never answered
			return nil, ctx.Err()
		}
	})
}

// apply acts on the flags at start, and returns a non-zero exit code if the
// server must not go on.
func (f *supervisionFlags) apply() int {
	if f.exclusive == "" {
		return 0
	}
	file, err := os.OpenFile(f.exclusive, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		logf("exclusive: %v", err)
		return exitUsage
	}
	// Held until the process ends: the kernel drops the lock with the last
	// descriptor, however the process dies.
	if err := lockExclusive(file); err != nil {
		logf("exclusive lock on %s held by another process (%v), exit code %d", f.exclusive, err, exitLocked)
		return exitLocked
	}
	f.lock = file
	return 0
}
