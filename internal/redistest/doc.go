// Package redistest runs a real Redis, Debian's redis-server, as a child
// process for the tests of musterd's OAuth storage (pkg/oauth/store).
//
// Place: test support only, beside the pipeline; it imports nothing of
// musterd's but the log-tail helper.
//
// Guarantees:
//
//   - The binary is the redis-server on PATH (`make redis` installs
//     Debian's), or the one MUSTERD_REDIS_BIN names. When it is missing the
//     test is skipped with a message that says to run `make redis`, unless
//     MUSTERD_REQUIRE_REDIS=1 (set by `make test` once redis-server is
//     found), where it fails instead: a suite that must run the storage
//     tests never passes by skipping them.
//   - [Start] runs its own redis-server, never the system's service, on a
//     free loopback port (--bind 127.0.0.1, protected mode on) with
//     persistence off (--save "", --appendonly no) and its working
//     directory in the test's temporary directory, so nothing outlives the
//     test and tests never share data. [Options.Password] sets
//     --requirepass. With [Options.TLS] the server speaks TLS only, with a
//     certificate from a certificate authority generated for that server
//     alone ([Redis.CAFile], [Redis.TLSConfig] trusts it and nothing else).
//     A port taken between choosing and binding it is retried on another.
//   - Start returns once the server answers PING (after AUTH when it has a
//     password), polling until [Options.StartTimeout]; it fails the test
//     with the server's last log lines otherwise.
//   - [Redis.Stop] kills the server and waits for it; t.Cleanup does the
//     same. [Redis.Restart] starts a new server on the same address and
//     password: without persistence it starts empty, which is what a
//     client's reconnection test needs.
//   - [Redis.Do] sends one command in Redis's wire protocol and returns
//     the reply's first line, to check the server without a client library.
//
// Use:
//
//	r := redistest.Start(t)
//	s, err := store.NewValkey(ctx, store.ValkeyOptions{URL: r.URL()})
//
// redis-server starts in a few milliseconds; each test may run its own.
package redistest
