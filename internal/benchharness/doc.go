// Command benchharness is musterd's benchmark harness, what make bench runs.
// It measures every key of docs/performance.md in one run, each beside what
// it is compared with, prints a table and writes bench/results.json (one number
// per key, and the machine).
//
// Three kinds of measure:
//
//   - In-process micro benchmarks: pkg/bus beside a buffered channel and
//     raw asaskevich/EventBus; no-op reconciles through the whole pipeline
//     beside a controller-runtime controller (controller.NewUnmanaged fed
//     by a source.TypedChannel, its default metrics on) and a plain
//     client-go workqueue loop, the floor, all three with the same handler,
//     workers and keys, taking turns in one run.
//   - In-process latency through the real filesystem watcher (real files,
//     fsnotify) and the real pipeline, with a reconciler that records when
//     it is called and what definition it sees: change to reconcile, a
//     burst of writes to one file, and the same change-to-reconcile measure
//     through a trailing 500 ms debounce (muster's design, implemented here
//     only as the baseline).
//   - The real musterd binary (built by make bench, given with -musterd):
//     change to Synced on the HTTP API, cold starts with 10,000 and with
//     100,000 workflow files and the resident memory after each, the
//     resident memory with nothing declared, and 60 s of idle with 1,000,
//     alone and with a headless Chromium showing the live page (page.go;
//     skipped without one);
//     and ten mcp-fake servers that take 2 s each to start,
//     from the binary's start to all Running, and a workflow edit made
//     1.5 s into their start-up to Synced.
//   - The MCP endpoint through the binary (mcp.go): a tool call through
//     /mcp/direct to a stdio server beside a client spawning that server
//     itself, alternated; and a new server file until list_changed, less
//     the server's own start.
//
// -only runs some of the measures (make bench ONLY=noop,cold). The load
// average before and after the run is written beside the machine: the
// project's machine is shared, and its figures move with the load.
//
// It is not a test: nothing here passes or fails on a timing. The table
// says which goals hold; docs/performance.md says why the others do not.
package main
