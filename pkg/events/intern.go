package events

// Handle is a small stand-in for a [Key] inside one stage, given by that
// stage's [Interner]: an index into the stage's table of records, so that
// the stage's queues, heaps and per-key state hold and compare 4 bytes, and
// index a slice, instead of hashing three strings in every map they pass.
// A handle means nothing outside the interner that gave it.
type Handle uint32

// Interner hands out a handle per key and keeps the table of keys behind
// them. A released handle is given to the next new key, so the table stays
// as large as the keys held at once, however many come and go. It is not
// safe for concurrent use: its stage guards it with its own lock.
//
// A stage releases a key's handle only once nothing of the stage refers to
// it any more (no queue, heap or worker holds it): a handle reused while an
// old holder still acts on it would act on another key.
type Interner struct {
	ids   map[Key]Handle
	keys  Records[internedKey]
	limit int // one past the largest handle given out
	free  []Handle
	peak  int // the most keys held since ids was made
}

// internedKey is the interner's record of a handle.
type internedKey struct {
	key  Key
	live bool
}

// retainedHandles is the most keys whose map an emptied interner keeps; a
// larger one is made afresh, so that a burst's peak is not held for life.
const retainedHandles = 1024

// Intern returns key's handle, giving it one if it has none. key must be
// canonical.
func (in *Interner) Intern(key Key) (h Handle, added bool) {
	if h, ok := in.ids[key]; ok {
		return h, false
	}
	if in.ids == nil {
		in.ids = map[Key]Handle{}
	}
	if n := len(in.free); n > 0 {
		h = in.free[n-1]
		in.free = in.free[:n-1]
	} else {
		h = Handle(in.limit)
		in.limit++
	}
	*in.keys.At(h) = internedKey{key: key, live: true}
	in.ids[key] = h
	in.peak = max(in.peak, len(in.ids))
	return h, true
}

// Lookup returns key's handle, if it has one.
func (in *Interner) Lookup(key Key) (Handle, bool) {
	h, ok := in.ids[key]
	return h, ok
}

// Key returns the key of a handle that is held.
func (in *Interner) Key(h Handle) Key { return in.keys.At(h).key }

// Held reports whether h is the handle of a key now.
func (in *Interner) Held(h Handle) bool { return int(h) < in.limit && in.keys.At(h).live }

// Len returns how many keys hold a handle.
func (in *Interner) Len() int { return len(in.ids) }

// Cap returns one past the largest handle given out: the length a slice
// indexed by handle needs.
func (in *Interner) Cap() int { return in.limit }

// Release gives h back; its key gets a new handle if it is interned again.
// A table that a burst grew is dropped once emptied after a fill that
// stayed small (the burst is over), and reset reports it, so that the
// stage drops its slices indexed by handle too.
func (in *Interner) Release(h Handle) (reset bool) {
	if !in.Held(h) {
		return false
	}
	rec := in.keys.At(h)
	delete(in.ids, rec.key)
	*rec = internedKey{}
	in.free = append(in.free, h)
	if len(in.ids) == 0 {
		// Emptied: the table goes if it is large but the fill that just
		// ended was small, so the burst that grew it is over. Dropping it
		// at the end of every large fill would grow it afresh for the
		// next fill of a long stream.
		burst := in.peak > retainedHandles
		in.peak = 0
		if !burst && in.limit > retainedHandles {
			*in = Interner{}
			return true
		}
	}
	return false
}

// All yields every held handle, in handle order.
func (in *Interner) All(yield func(Handle, Key) bool) {
	for i := range in.limit {
		if rec := in.keys.At(Handle(i)); rec.live && !yield(Handle(i), rec.key) {
			return
		}
	}
}
