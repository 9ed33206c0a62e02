// Package archtest holds the test that keeps musterd's imports flowing one
// way, in pipeline order: events is a leaf; bus knows only events; the
// stages know the bus, the events and their own interfaces; reconcilers
// never know the bus; only the wiring (pipeline, lifecycle, cmd) knows
// everything.
package archtest
