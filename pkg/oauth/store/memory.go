package store

import (
	"context"
	"slices"
	"strings"
	"sync"
	"time"
)

// MemoryOptions configures [NewMemory].
type MemoryOptions struct {
	// Now tells the time expiries are measured against. Default: time.Now
	// (virtual inside a testing/synctest bubble).
	Now func() time.Time
	// SweepInterval is how often, at most, a Put also drops every expired
	// value, so that values nobody reads again do not pile up. Expired
	// values are never returned either way. Default: 1 minute.
	SweepInterval time.Duration
}

// memory is the Store of one musterd process: maps under a mutex, gone
// when the process ends.
type memory struct {
	now      func() time.Time
	interval time.Duration

	mu        sync.Mutex
	closed    bool
	entries   map[string]entry
	lastSweep time.Time
}

type entry struct {
	value   []byte
	expires time.Time // zero: never
}

func (e entry) expired(now time.Time) bool {
	return !e.expires.IsZero() && !now.Before(e.expires)
}

// NewMemory returns a Store kept in this process's memory. Its values are
// lost when the process ends; nothing is written anywhere.
func NewMemory(opts MemoryOptions) Store {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.SweepInterval <= 0 {
		opts.SweepInterval = time.Minute
	}
	return &memory{now: opts.Now, interval: opts.SweepInterval, entries: map[string]entry{}, lastSweep: opts.Now()}
}

// String keeps the values out of a store printed by mistake.
func (m *memory) String() string { return "oauth store (memory)" }

func (m *memory) Put(ctx context.Context, key string, value []byte, ttl time.Duration) error {
	if err := check(key, ttl); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return ErrClosed
	}
	now := m.now()
	e := entry{value: slices.Clone(value)}
	if e.value == nil {
		e.value = []byte{}
	}
	if ttl > 0 {
		e.expires = now.Add(ttl)
	}
	m.entries[key] = e
	if now.Sub(m.lastSweep) >= m.interval {
		m.lastSweep = now
		for k, e := range m.entries {
			if e.expired(now) {
				delete(m.entries, k)
			}
		}
	}
	return nil
}

func (m *memory) Get(ctx context.Context, key string) ([]byte, bool, error) {
	return m.get(key, false)
}

func (m *memory) Take(ctx context.Context, key string) ([]byte, bool, error) {
	return m.get(key, true)
}

func (m *memory) get(key string, take bool) ([]byte, bool, error) {
	if err := check(key, 0); err != nil {
		return nil, false, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return nil, false, ErrClosed
	}
	e, ok := m.entries[key]
	if !ok {
		return nil, false, nil
	}
	if e.expired(m.now()) {
		delete(m.entries, key)
		return nil, false, nil
	}
	if take {
		delete(m.entries, key)
	}
	return slices.Clone(e.value), true, nil
}

func (m *memory) Delete(ctx context.Context, keys ...string) error {
	for _, k := range keys {
		if k == "" {
			return ErrEmptyKey
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return ErrClosed
	}
	for _, k := range keys {
		delete(m.entries, k)
	}
	return nil
}

func (m *memory) Keys(ctx context.Context, prefix string) ([]string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return nil, ErrClosed
	}
	now := m.now()
	var keys []string
	for k, e := range m.entries {
		if strings.HasPrefix(k, prefix) && !e.expired(now) {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	return keys, nil
}

func (m *memory) Close() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.closed = true
	m.entries = nil
	return nil
}
