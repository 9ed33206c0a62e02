package resources

import (
	"hash/maphash"
	"iter"

	"github.com/musterd/musterd/pkg/events"
)

// entrySet is the entries by key: a map from the hash of a key to the
// entries of that hash, chained through their next. A map keyed by
// events.Key held each key a second time beside its entry, 48 bytes a
// slot where a hash is 8: 58 bytes a resource at 100,000 of them
// (BenchmarkRetainedPerResource). Two keys of one hash are rare, and
// only cost a step along the chain: an entry is found by its key, never
// by the hash alone.
type entrySet struct {
	seed   maphash.Seed
	byHash map[uint64]*entry
	n      int
}

func newEntrySet() entrySet {
	return entrySet{seed: maphash.MakeSeed(), byHash: map[uint64]*entry{}}
}

func (s *entrySet) hash(k events.Key) uint64 {
	var h maphash.Hash
	h.SetSeed(s.seed)
	h.WriteString(k.Kind)
	h.WriteByte(0)
	h.WriteString(k.Namespace)
	h.WriteByte(0)
	h.WriteString(k.Name)
	return h.Sum64()
}

// get returns the entry of k, nil if there is none.
func (s *entrySet) get(k events.Key) *entry { return s.getAt(s.hash(k), k) }

// add enters e, whose key has no entry yet.
func (s *entrySet) add(e *entry) { s.addAt(s.hash(e.key), e) }

// remove takes e out.
func (s *entrySet) remove(e *entry) { s.removeAt(s.hash(e.key), e) }

// getAt, addAt and removeAt are get, add and remove given the key's hash
// h, so that a test can give keys one hash.
func (s *entrySet) getAt(h uint64, k events.Key) *entry {
	for e := s.byHash[h]; e != nil; e = e.next {
		if e.key == k {
			return e
		}
	}
	return nil
}

func (s *entrySet) addAt(h uint64, e *entry) {
	e.next = s.byHash[h]
	s.byHash[h] = e
	s.n++
}

func (s *entrySet) removeAt(h uint64, e *entry) {
	var prev *entry
	for at := s.byHash[h]; at != nil; prev, at = at, at.next {
		if at != e {
			continue
		}
		switch {
		case prev != nil:
			prev.next = e.next
		case e.next != nil:
			s.byHash[h] = e.next
		default:
			delete(s.byHash, h)
		}
		e.next = nil
		s.n--
		return
	}
}

// all yields every entry, in no order.
func (s *entrySet) all() iter.Seq[*entry] {
	return func(yield func(*entry) bool) {
		for _, e := range s.byHash {
			for ; e != nil; e = e.next {
				if !yield(e) {
					return
				}
			}
		}
	}
}
