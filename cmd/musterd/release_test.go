package main

import (
	"context"
	"runtime"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

func TestTheHeapIsReleasedOnceReadyAndOnceWrittenEachWhenSettled(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var ready, written atomic.Bool
		var released atomic.Int32
		done := make(chan struct{})
		go func() {
			releaseAfterStart(context.Background(), ready.Load, written.Load, func(string) { released.Add(1) })
			close(done)
		}()
		time.Sleep(10 * settlePoll)
		synctest.Wait()
		if n := released.Load(); n != 0 {
			t.Fatalf("released %d times before ready", n)
		}
		ready.Store(true)
		time.Sleep(settlePoll) // one poll sees it: not yet settled
		synctest.Wait()
		if n := released.Load(); n != 0 {
			t.Fatalf("released %d times after one poll saw ready", n)
		}
		time.Sleep(settlePoll)
		synctest.Wait()
		if n := released.Load(); n != 1 {
			t.Fatalf("released %d times after two polls saw ready, want 1", n)
		}
		written.Store(true)
		time.Sleep(2 * settlePoll)
		synctest.Wait()
		<-done
		if n := released.Load(); n != 2 {
			t.Fatalf("released %d times once written, want 2", n)
		}
	})
}

func TestTheReleaseGivesUpWhenTheDaemonStops(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() {
			releaseAfterStart(ctx, func() bool { return false }, func() bool { return false }, func(string) { t.Error("released") })
			close(done)
		}()
		time.Sleep(3 * settlePoll)
		cancel()
		<-done
	})
}

func TestTheReleaseReadsTheResidentSizeAndTheHeap(t *testing.T) {
	runtime.GC() // the live heap is known from the first collection on
	m := readMemory()
	if m.rssMB <= 0 || m.liveMB <= 0 {
		t.Fatalf("readMemory() = %+v, want a resident size and a live heap", m)
	}
	if m.liveMB > m.rssMB {
		t.Fatalf("readMemory() = %+v: more live heap than is resident", m)
	}
}
