package main

import (
	"github.com/musterd/musterd/pkg/api/types"
	"github.com/musterd/musterd/pkg/bus"
	"github.com/musterd/musterd/pkg/events"
	"github.com/musterd/musterd/pkg/router"
)

// publishCalls puts the router's count of a server's calls in an interval
// that is over on the bus, for the live page to read the server's calls
// again. The router tells it at most once per interval per server with
// calls, and never while nobody calls.
func (d *daemon) publishCalls(server events.Key, c router.CallCount) {
	bus.Publish(d.Bus, events.ToolCallsCounted{Meta: events.NewMeta(""), Key: server,
		Start: c.Start, Interval: c.Interval, Calls: c.Calls, Errors: c.Errors})
}

// callsOf is a server's recent calls, as the API shows them.
func (d *daemon) callsOf(server events.Key) types.Calls {
	h := d.Router.CallHistory(server)
	return types.Calls{Start: h.Start, IntervalSeconds: h.Interval.Seconds(), Calls: h.Calls, Errors: h.Errors}
}
