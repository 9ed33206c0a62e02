// Package apitest runs musterd's HTTP API for tests, inside a
// testing/synctest bubble, over an in-memory network: a real socket would
// keep the bubble's goroutines from ever being durably blocked, so virtual
// time would stand still.
//
// Place in the pipeline: none; test support for package api, its client
// and the command line.
//
// Guarantees: Serve's server and connections, and a Fixture's store and
// bus, are stopped by the test's cleanup, so no goroutine outlives the
// bubble. A Fixture holds a real resources.Index and a real
// statusync.Store on a real bus; tests drive it by declaring files and by
// publishing the events a coordinator would, and each such call returns
// once the bubble is idle again.
package apitest
