package main

// The status writes' hold at start.
//
// Why: a cold start's status writes compete with its decoding and
// reconciles for the CPU, a large share of it with many resources. Held until the first full reconcile, they follow it, each
// resource's once with its outcome; the API and the metrics show every
// status meanwhile (statusync.StoreOptions.HoldWrites).
//
// The bound keeps status files coming when that reconcile is long, or
// never ends, as on a replica that follows in leader election.

import "time"

// statusWritesHold bounds how long status writes wait for the first full
// reconcile.
const statusWritesHold = 30 * time.Second

// holdStatusWrites closes release once ready is closed, or once bound has
// passed, whichever comes first.
func holdStatusWrites(ready <-chan struct{}, bound time.Duration, release chan<- struct{}) {
	t := time.NewTimer(bound)
	defer t.Stop()
	select {
	case <-ready:
	case <-t.C:
	}
	close(release)
}
