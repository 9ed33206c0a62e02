package bus_test

import (
	"fmt"
	"time"

	"github.com/musterd/musterd/pkg/bus"
	"github.com/musterd/musterd/pkg/events"
)

// A reader follows the failures on the bus at its own pace.
func ExampleFollow() {
	b := bus.New(bus.Options{})
	b.Start()
	defer b.Close()
	f, err := bus.Follow(b, bus.FollowOptions[events.ResourceFailed]{Name: "failures", Buffer: 256,
		Select: func(e events.Event) (events.ResourceFailed, bool) { rf, ok := e.(events.ResourceFailed); return rf, ok }})
	if err != nil {
		panic(err)
	}
	defer f.Stop()
	meta := events.NewMetaAt(time.Unix(0, 0), "c-1")
	key := events.NewKey("MCPServer", "default", "git")
	b.Publish(events.ResourceSynced{Meta: meta, Key: key})
	b.Publish(events.ResourceFailed{Meta: meta, Key: key, Error: "connect: refused"})
	e := <-f.Events()
	fmt.Println(e.Key, e.Error)
	// Output: MCPServer/default/git connect: refused
}
