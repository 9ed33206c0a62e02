package store

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/valkey-io/valkey-go"
)

// DefaultKeyPrefix is put before every key a Valkey store writes, so that
// musterd's state has a namespace of its own in a shared server.
const DefaultKeyPrefix = "musterd:oauth:"

// ValkeyOptions configures [NewValkey].
type ValkeyOptions struct {
	// URL is the server: host:port (as in muster's storage.valkey.url),
	// or redis://[user:password@]host:port[/db], rediss://… for TLS,
	// valkey://…, valkeys://… or unix:///path/to/socket. Required.
	URL string
	// Password authenticates to the server; it replaces one in URL.
	// Default: the URL's, else none.
	Password string
	// DB is the database number to SELECT; non-zero replaces the URL's.
	// Default: the URL's, else 0.
	DB int
	// TLS, when set, is the TLS configuration to connect with; it
	// replaces the one a rediss:// URL implies. Default: the URL's (TLS
	// for rediss:// and valkeys://, verifying the server's name), else
	// plain TCP.
	TLS *tls.Config
	// KeyPrefix is put before every key in the server and taken off the
	// keys [Store.Keys] returns. Default: [DefaultKeyPrefix].
	KeyPrefix string
	// DialTimeout bounds each connection attempt. Default: 5 s.
	DialTimeout time.Duration
}

// valkeyStore keeps each value as a string under KeyPrefix+key, with the
// expiry in the server (SET … PX), so that values outlive musterd.
type valkeyStore struct {
	client valkey.Client
	prefix string
	addr   string // the server's address for errors: never the URL, which may hold a password
	closed atomic.Bool
}

// NewValkey connects to a Valkey or Redis server (Redis 6.2 or later, for
// GETDEL) and checks it answers PING. A server that cannot be reached or
// refuses the password is an error here, naming its address but never the
// password: there is no quiet fallback to memory.
func NewValkey(ctx context.Context, opts ValkeyOptions) (Store, error) {
	if opts.URL == "" {
		return nil, errors.New("oauth store: valkey: no URL")
	}
	var opt valkey.ClientOption
	if strings.Contains(opts.URL, "://") {
		parsed, err := valkey.ParseURL(opts.URL)
		if err != nil {
			// The parser's error may quote the URL, and with it a
			// password: say what is wrong without it.
			return nil, errors.New("oauth store: valkey: the URL is not host:port, redis://host:port/db, rediss://…, valkey://…, valkeys://… or unix:///path")
		}
		opt = parsed
	} else {
		opt.InitAddress = []string{opts.URL}
	}
	if opts.Password != "" {
		opt.Password = opts.Password
	}
	if opts.DB != 0 {
		opt.SelectDB = opts.DB
	}
	if opts.TLS != nil {
		opt.TLSConfig = opts.TLS
	}
	opt.Dialer.Timeout = opts.DialTimeout
	if opt.Dialer.Timeout <= 0 {
		opt.Dialer.Timeout = 5 * time.Second
	}
	// The store never uses client-side caching; turned off, it cannot
	// refuse a server without RESP3's client tracking.
	opt.DisableCache = true
	prefix := opts.KeyPrefix
	if prefix == "" {
		prefix = DefaultKeyPrefix
	}
	s := &valkeyStore{prefix: prefix, addr: strings.Join(opt.InitAddress, ",")}

	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("oauth store: valkey at %s: %w", s.addr, err)
	}
	client, err := valkey.NewClient(opt)
	if err != nil {
		return nil, fmt.Errorf("oauth store: valkey at %s: connect: %w", s.addr, err)
	}
	if err := client.Do(ctx, client.B().Ping().Build()).Error(); err != nil {
		client.Close()
		return nil, fmt.Errorf("oauth store: valkey at %s: PING: %w", s.addr, err)
	}
	s.client = client
	return s, nil
}

// String keeps the connection's details out of a store printed by mistake.
func (s *valkeyStore) String() string { return "oauth store (valkey at " + s.addr + ")" }

func (s *valkeyStore) fail(op, what string, err error) error {
	return fmt.Errorf("oauth store: valkey at %s: %s %s: %w", s.addr, op, what, err)
}

func (s *valkeyStore) Put(ctx context.Context, key string, value []byte, ttl time.Duration) error {
	if err := check(key, ttl); err != nil {
		return err
	}
	if s.closed.Load() {
		return ErrClosed
	}
	set := s.client.B().Set().Key(s.prefix + key).Value(string(value))
	var cmd valkey.Completed
	if ttl > 0 {
		// Rounded up to Redis's millisecond, so a short TTL never becomes
		// none.
		cmd = set.PxMilliseconds(int64((ttl + time.Millisecond - 1) / time.Millisecond)).Build()
	} else {
		cmd = set.Build() // a SET without an expiry drops any the key had
	}
	if err := s.client.Do(ctx, cmd).Error(); err != nil {
		return s.fail("put", kind(key), err)
	}
	return nil
}

func (s *valkeyStore) Get(ctx context.Context, key string) ([]byte, bool, error) {
	if err := check(key, 0); err != nil {
		return nil, false, err
	}
	if s.closed.Load() {
		return nil, false, ErrClosed
	}
	return s.value(s.client.Do(ctx, s.client.B().Get().Key(s.prefix+key).Build()), "get", key)
}

func (s *valkeyStore) Take(ctx context.Context, key string) ([]byte, bool, error) {
	if err := check(key, 0); err != nil {
		return nil, false, err
	}
	if s.closed.Load() {
		return nil, false, ErrClosed
	}
	// GETDEL reads and deletes in one command: of two musterds taking
	// one login state, one alone gets it.
	return s.value(s.client.Do(ctx, s.client.B().Getdel().Key(s.prefix+key).Build()), "take", key)
}

func (s *valkeyStore) value(res valkey.ValkeyResult, op, key string) ([]byte, bool, error) {
	v, err := res.AsBytes()
	if valkey.IsValkeyNil(err) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, s.fail(op, kind(key), err)
	}
	if v == nil {
		v = []byte{}
	}
	return v, true, nil
}

func (s *valkeyStore) Delete(ctx context.Context, keys ...string) error {
	for _, k := range keys {
		if k == "" {
			return ErrEmptyKey
		}
	}
	if s.closed.Load() {
		return ErrClosed
	}
	if len(keys) == 0 {
		return nil
	}
	// One DEL per key: a cluster refuses one DEL of keys in different
	// slots, and the client pipelines these anyway.
	cmds := make(valkey.Commands, 0, len(keys))
	for _, k := range keys {
		cmds = append(cmds, s.client.B().Del().Key(s.prefix+k).Build())
	}
	for i, res := range s.client.DoMulti(ctx, cmds...) {
		if err := res.Error(); err != nil {
			return s.fail("delete", kind(keys[i]), err)
		}
	}
	return nil
}

func (s *valkeyStore) Keys(ctx context.Context, prefix string) ([]string, error) {
	if s.closed.Load() {
		return nil, ErrClosed
	}
	pattern := escapeGlob(s.prefix+prefix) + "*"
	seen := map[string]bool{}
	// SCAN walks the keyspace in steps without blocking the server as KEYS
	// would; a cluster's is walked node by node.
	for _, node := range s.client.Nodes() {
		var cursor uint64
		for {
			entry, err := node.Do(ctx, node.B().Scan().Cursor(cursor).Match(pattern).Count(200).Build()).AsScanEntry()
			if err != nil {
				return nil, s.fail("keys", kind(prefix), err)
			}
			for _, k := range entry.Elements {
				if strings.HasPrefix(k, s.prefix+prefix) {
					seen[strings.TrimPrefix(k, s.prefix)] = true
				}
			}
			if cursor = entry.Cursor; cursor == 0 {
				break
			}
		}
	}
	keys := make([]string, 0, len(seen))
	for k := range seen {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys, nil
}

func (s *valkeyStore) Close() error {
	if s.closed.Swap(true) {
		return nil
	}
	s.client.Close()
	return nil
}

// escapeGlob makes s match itself alone in a Redis MATCH pattern, whose
// special characters are *, ?, [, ] and the backslash that escapes them.
func escapeGlob(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ { // bytes, so that a key not in UTF-8 stays itself
		if strings.IndexByte(`*?[]\`, s[i]) >= 0 {
			b.WriteByte('\\')
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
