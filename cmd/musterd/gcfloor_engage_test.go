package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"runtime/metrics"
	"strings"
	"testing"
	"time"
)

// The floor engaged, observed through the runtime's own figures: GOGC
// (/gc/gogc:percent) and the heap goal (/gc/heap/goal:bytes). The floor
// sets the process's collector for its life, so each check runs in a
// child: this test binary run again with envGCFloorChild naming the
// check, and the test process's own GC settings are never touched. The
// child does its check from init and exits, before TestMain, which would
// build the daemon's binaries for nothing.
const envGCFloorChild = "MUSTERD_TEST_GCFLOOR_CHILD"

// gcFloorChildOK is the child's last line when its check passed.
const gcFloorChildOK = "gcfloor child: ok"

func init() {
	check := os.Getenv(envGCFloorChild)
	if check == "" {
		return
	}
	if err := gcFloorChild(check); err != nil {
		fmt.Println("gcfloor child:", err)
		os.Exit(1)
	}
	fmt.Println(gcFloorChildOK)
	os.Exit(0)
}

// Without GOGC in the environment, the floor raises the collector's goal
// to the floor while the live heap is below it, gives Go's default back
// while it is above, and raises it again when it falls below.
func TestGCFloorRaisesTheGoalOfASmallHeap(t *testing.T) {
	runGCFloorChild(t, "engages", "")
}

// With GOGC in the environment, even at its default, the floor does
// nothing: the operator's setting rules.
func TestGCFloorIsOffWhenGOGCIsSet(t *testing.T) {
	runGCFloorChild(t, "off", "100")
}

// runGCFloorChild runs the child for check, with GOGC set to gogc, or
// unset if gogc is empty, and fails unless its check passed.
func runGCFloorChild(t *testing.T, check, gogc string) {
	t.Parallel()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(t.Context(), exe, "-test.run=^$")
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "GOGC=") && !strings.HasPrefix(kv, envGCFloorChild+"=") {
			env = append(env, kv)
		}
	}
	env = append(env, envGCFloorChild+"="+check)
	if gogc != "" {
		env = append(env, "GOGC="+gogc)
	}
	cmd.Env = env
	out, err := cmd.CombinedOutput()
	t.Logf("child (%s):\n%s", check, out)
	if err != nil || !strings.HasSuffix(strings.TrimSpace(string(out)), gcFloorChildOK) {
		t.Fatalf("the child (%s) failed: %v", check, err)
	}
}

// gcFloorChild is the child's check.
func gcFloorChild(check string) error {
	before, err := readGC()
	if err != nil {
		return err
	}
	fmt.Printf("before: %+v\n", before)
	if before.percent != gcDefaultPercent {
		return fmt.Errorf("GOGC %d before the floor engaged, want Go's default %d", before.percent, gcDefaultPercent)
	}
	if before.goal >= gcHeapFloor {
		return fmt.Errorf("a goal of %d bytes before the floor engaged: a test binary's heap is not that large; nothing to observe", before.goal)
	}
	engageGCFloor()
	small, err := settleGC()
	if err != nil {
		return err
	}
	fmt.Printf("engaged, small heap: %+v\n", small)

	switch check {
	case "off":
		if small.percent != gcDefaultPercent || small.goal >= gcHeapFloor {
			return fmt.Errorf("GOGC set: the floor changed the collector: %+v", small)
		}
		return nil
	case "engages":
	default:
		return fmt.Errorf("unknown check %q", check)
	}
	if small.percent <= gcDefaultPercent || small.percent > gcMaxPercent {
		return fmt.Errorf("GOGC %d with a live heap of %d bytes: the floor did not raise it", small.percent, small.live)
	}
	// GOGC = (floor-live)/live, rounded down: the goal is within a
	// hundredth of the live heap under the floor, or above (the goal
	// counts stacks and globals too).
	if small.goal < gcHeapFloor-small.live/100-1 {
		return fmt.Errorf("heap goal %d bytes, want at least the floor, %d", small.goal, gcHeapFloor)
	}

	big := make([]byte, 2*gcHeapFloor)
	for i := range big {
		big[i] = byte(i)
	}
	large, err := settleGC()
	if err != nil {
		return err
	}
	fmt.Printf("engaged, large heap: %+v\n", large)
	if large.percent != gcDefaultPercent {
		return fmt.Errorf("GOGC %d with a live heap of %d bytes, above the floor: want Go's default %d", large.percent, large.live, gcDefaultPercent)
	}
	runtime.KeepAlive(big)

	again, err := settleGC()
	if err != nil {
		return err
	}
	fmt.Printf("engaged, small heap again: %+v\n", again)
	if again.percent <= gcDefaultPercent {
		return fmt.Errorf("GOGC %d with a live heap of %d bytes again: the floor did not raise it again", again.percent, again.live)
	}
	return nil
}

type gcState struct {
	percent           int
	goal, live, cycle uint64
}

func readGC() (gcState, error) {
	s := []metrics.Sample{{Name: "/gc/gogc:percent"}, {Name: "/gc/heap/goal:bytes"}, {Name: "/gc/heap/live:bytes"}, {Name: "/gc/cycles/total:gc-cycles"}}
	metrics.Read(s)
	for _, m := range s {
		if m.Value.Kind() != metrics.KindUint64 {
			return gcState{}, fmt.Errorf("runtime/metrics has no %s", m.Name)
		}
	}
	return gcState{percent: int(s[0].Value.Uint64()), goal: s[1].Value.Uint64(), live: s[2].Value.Uint64(), cycle: s[3].Value.Uint64()}, nil
}

// settleGC runs collections until the floor has set the collector from
// the live heap as it is now, and then reads it. The floor's finalizer
// (on a sentinel it makes anew at each run) and the child's run on the
// runtime's one finalizer goroutine, which runs what it took from the
// queue before it takes more; runtime.GC returns once its cycle's
// finalizers are queued. So once the child's finalizer of cycle c+2 has
// run, every finalizer queued by cycle c has. The floor's sentinel alive
// at the first cycle here, or the one its run makes during that cycle,
// is collected by the second: that run, after the first cycle, reads the
// heap of now, and is over once the child's finalizer of the fourth has
// run.
func settleGC() (gcState, error) {
	for range 4 {
		ran := make(chan struct{})
		finalizeAfterGC(ran)
		runtime.GC()
		select {
		case <-ran:
		case <-time.After(30 * time.Second):
			return gcState{}, errors.New("no finalizer ran within 30 s of a collection")
		}
	}
	return readGC()
}

// finalizeAfterGC makes a sentinel, unreachable once it returns, whose
// finalizer closes ran.
func finalizeAfterGC(ran chan struct{}) {
	sentinel := new([16]byte) // past the tiny allocator, as the floor's
	runtime.SetFinalizer(sentinel, func(*[16]byte) { close(ran) })
}
