package events

import "hash/maphash"

// Handle is a small stand-in for a [Key] inside one stage, given by that
// stage's [Interner]: an index into the stage's table of records, so that
// the stage's queues, heaps and per-key state hold and compare 4 bytes, and
// index a slice, instead of hashing three strings in every map they pass.
// A handle means nothing outside the interner that gave it.
type Handle uint32

// Interner is the interner of resource keys, the one every stage keeps.
type Interner = InternerOf[Key]

// InternerOf hands out a handle per key and keeps the table of keys behind
// them. A released handle is given to the next new key, so the table stays
// as large as the keys held at once, however many come and go. It is not
// safe for concurrent use: its stage guards it with its own lock.
//
// A stage releases a key's handle only once nothing of the stage refers to
// it any more (no queue, heap or worker holds it): a handle reused while an
// old holder still acts on it would act on another key.
//
// Its index is its own open-addressing table rather than a Go map, so that
// a key is hashed once per Intern and never at Release: a map hashes a new
// key twice (the lookup, then the insert) and again at its delete, and
// every stage on a reconcile's path interns its key. Each slot holds a handle and the upper half of its key's
// hash, so a probe compares keys only where the hashes agree; and a key's
// home slot is its hash's top bits, which that half holds at every table
// size, so growing the table and a delete's shifting back of the entries
// after it (no tombstones) read the slots alone, never the keys' records:
// reading each record as the table grew would be a cache miss a key.
//
// Keys may be of any comparable type: besides the stages' resource keys
// ([Interner]), a coalescing mailbox interns the keys of its pending
// events, and empties it at every drain with Clear.
type InternerOf[K comparable] struct {
	seed  maphash.Seed
	slots []slot // len is a power of two, or 0; at most half full
	shift uint   // 64 - log2(len(slots)): a hash's top bits are its home
	keys  Records[internedKey[K]]
	held  []uint64 // bit h: handle h is held
	n     int      // keys held
	limit int      // one past the largest handle given out
	free  []Handle
	peak  int // the most keys held since the table was made
}

// slot is one place of the index: 0 if empty, else the upper half of the
// key's hash and its handle + 1.
type slot uint64

func slotOf(hash uint64, h Handle) slot { return slot(hash&^0xffffffff | uint64(h) + 1) }
func (s slot) handle() Handle           { return Handle(uint32(s) - 1) }
func (s slot) tag() uint64              { return uint64(s) &^ 0xffffffff }

// internedKey is the interner's record of a handle: its key alone. The
// key's hash is not kept beside it, nor whether the handle is held (the
// interner's held bits say that): they would be a quarter of each
// interner's records, 16 of 64 bytes a key in each of the stages, and only Release, once a key, hashes the key again.
type internedKey[K comparable] struct {
	key K
}

// retainedHandles is the most keys whose table an emptied interner keeps;
// a larger one is made afresh, so that a burst's peak is not held for life.
const retainedHandles = 1024

// find returns the slot index holding key, or the empty slot where it
// would go.
func (in *InternerOf[K]) find(key K, hash uint64) (i int, found bool) {
	mask := len(in.slots) - 1
	for i = in.home(hash); ; i = (i + 1) & mask {
		s := in.slots[i]
		if s == 0 {
			return i, false
		}
		if s.tag() == hash&^0xffffffff && in.keys.At(s.handle()).key == key {
			return i, true
		}
	}
}

// Intern returns key's handle, giving it one if it has none. key must be
// canonical.
func (in *InternerOf[K]) Intern(key K) (h Handle, added bool) {
	if in.slots == nil {
		in.seed = maphash.MakeSeed()
		in.slots, in.shift = make([]slot, 16), 64-4
	}
	hash := maphash.Comparable(in.seed, key)
	i, found := in.find(key, hash)
	if found {
		return in.slots[i].handle(), false
	}
	if n := len(in.free); n > 0 {
		h = in.free[n-1]
		in.free = in.free[:n-1]
	} else {
		h = Handle(in.limit)
		in.limit++
	}
	*in.keys.At(h) = internedKey[K]{key: key}
	in.setHeld(h, true)
	in.slots[i] = slotOf(hash, h)
	in.n++
	in.peak = max(in.peak, in.n)
	if 2*in.n > len(in.slots) {
		in.grow()
	}
	return h, true
}

// home is the slot where a key of hash belongs: its hash's top bits.
func (in *InternerOf[K]) home(hash uint64) int { return int(hash >> in.shift) }

// grow doubles the index, placing every handle again by its slot's tag.
func (in *InternerOf[K]) grow() {
	old := in.slots
	in.slots, in.shift = make([]slot, 2*len(old)), in.shift-1
	mask := len(in.slots) - 1
	for _, s := range old {
		if s == 0 {
			continue
		}
		i := in.home(s.tag())
		for in.slots[i] != 0 {
			i = (i + 1) & mask
		}
		in.slots[i] = s
	}
}

// Lookup returns key's handle, if it has one.
func (in *InternerOf[K]) Lookup(key K) (Handle, bool) {
	if in.slots == nil {
		return 0, false
	}
	i, found := in.find(key, maphash.Comparable(in.seed, key))
	if !found {
		return 0, false
	}
	return in.slots[i].handle(), true
}

// Key returns the key of a handle that is held.
func (in *InternerOf[K]) Key(h Handle) K { return in.keys.At(h).key }

// Held reports whether h is the handle of a key now.
func (in *InternerOf[K]) Held(h Handle) bool {
	return int(h) < in.limit && in.held[h/64]&(1<<(h%64)) != 0
}

// setHeld sets or clears h's held bit, growing the bits to cover h.
func (in *InternerOf[K]) setHeld(h Handle, held bool) {
	w := int(h / 64)
	if w >= len(in.held) {
		in.held = append(in.held, make([]uint64, w+1-len(in.held))...)
	}
	if held {
		in.held[w] |= 1 << (h % 64)
	} else {
		in.held[w] &^= 1 << (h % 64)
	}
}

// Len returns how many keys hold a handle.
func (in *InternerOf[K]) Len() int { return in.n }

// Cap returns one past the largest handle given out: the length a slice
// indexed by handle needs.
func (in *InternerOf[K]) Cap() int { return in.limit }

// Release gives h back; its key gets a new handle if it is interned again.
// A table that a burst grew is dropped once emptied after a fill that
// stayed small (the burst is over), and reset reports it, so that the
// stage drops its slices indexed by handle too.
func (in *InternerOf[K]) Release(h Handle) (reset bool) {
	if !in.Held(h) {
		return false
	}
	rec := in.keys.At(h)
	in.remove(maphash.Comparable(in.seed, rec.key), h)
	*rec = internedKey[K]{}
	in.setHeld(h, false)
	in.n--
	in.free = append(in.free, h)
	if in.n == 0 {
		// Emptied: the table goes if it is large but the fill that just
		// ended was small, so the burst that grew it is over. Dropping it
		// at the end of every large fill would grow it afresh for the
		// next fill of a long stream.
		burst := in.peak > retainedHandles
		in.peak = 0
		if !burst && in.limit > retainedHandles {
			*in = InternerOf[K]{}
			return true
		}
	}
	return false
}

// KeepsBurst reports whether no key holds a handle while the interner
// keeps the table a burst grew, as Release does for the next fill of a
// stream. Its owner may drop it (assigning the zero interner) once it has
// stayed so long enough for the burst to be over.
func (in *InternerOf[K]) KeepsBurst() bool { return in.n == 0 && in.limit > retainedHandles }

// Clear releases every handle at once, keeping the table's allocation for
// the keys to come; handles are given from 0 again. It costs a clear of
// the table, not a Release per key.
func (in *InternerOf[K]) Clear() {
	clear(in.slots)
	for h := range in.limit {
		*in.keys.At(Handle(h)) = internedKey[K]{} // lets the keys go
	}
	clear(in.held)
	in.n, in.limit, in.peak = 0, 0, 0
	in.free = in.free[:0]
}

// remove empties h's slot and shifts back the entries after it that
// probed past it, so that every key stays reachable from its home slot.
func (in *InternerOf[K]) remove(hash uint64, h Handle) {
	mask := len(in.slots) - 1
	i := in.home(hash)
	for in.slots[i] == 0 || in.slots[i].handle() != h {
		i = (i + 1) & mask
	}
	for j := (i + 1) & mask; in.slots[j] != 0; j = (j + 1) & mask {
		home := in.home(in.slots[j].tag())
		// The entry at j may move to the hole at i unless its home lies
		// cyclically in (i, j]: then it was never past i.
		if (j-home)&mask >= (j-i)&mask {
			in.slots[i] = in.slots[j]
			i = j
		}
	}
	in.slots[i] = 0
}

// All yields every held handle, in handle order.
func (in *InternerOf[K]) All(yield func(Handle, K) bool) {
	for i := range in.limit {
		if in.Held(Handle(i)) && !yield(Handle(i), in.keys.At(Handle(i)).key) {
			return
		}
	}
}
