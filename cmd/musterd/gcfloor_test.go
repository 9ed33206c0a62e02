package main

import "testing"

func TestGCPercentLetsASmallHeapGrowToTheFloorAndLeavesALargeOneAlone(t *testing.T) {
	const mib = 1 << 20
	for _, c := range []struct {
		live, floor uint64
		want        int
	}{
		{2 * mib, 32 * mib, 1500},  // goal 32 MiB
		{8 * mib, 32 * mib, 300},   // goal 32 MiB
		{20 * mib, 32 * mib, 100},  // 60%: never under Go's default
		{32 * mib, 32 * mib, 100},  // at the floor: the default
		{200 * mib, 32 * mib, 100}, // above it: as without the floor
		{1 * mib / 2, 32 * mib, 1600},
		{0, 32 * mib, 100}, // nothing measured yet
	} {
		if got := gcPercentFor(c.live, c.floor); got != c.want {
			t.Errorf("gcPercentFor(%d MiB, %d MiB) = %d, want %d", c.live/mib, c.floor/mib, got, c.want)
		}
	}
}
