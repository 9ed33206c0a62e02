// Package ui is musterd's live page: static HTML, CSS and JavaScript
// modules embedded in the binary and served under /ui/.
//
// Place in the pipeline: none. It only serves files; the page reads
// everything it shows from the API (package api) in the browser, over the
// same listener, with the same guard: loopback unless -allow-remote, and
// the bearer token, when one is set, for what the API guards with it (the
// event stream, executions, every control). The wiring mounts Handler
// beside the API in cmd/musterd. It imports nothing of musterd.
//
// The page:
//
//   - follows the API's event stream (GET /api/v1/events) with fetch and a
//     stream reader, not EventSource, so that the token travels in the
//     Authorization header and never in a URL; it re-reads only the
//     resources, the overview and the executions that an event names, and
//     polls nothing; a server's row draws its recent calls and errors (the
//     object's calls) as an inline SVG sparkline with the numbers in words
//     beside it, read again when a ToolCallsCounted names the server and
//     aged out of its ten minutes by the page's own clock (one timer, only
//     while a row shows calls, that asks nothing of the API);
//   - keeps the token in the tab's sessionStorage only, asked for by a
//     prompt when the API answers 401;
//   - sets every text that comes from users' files, servers or the API
//     through textContent or attributes, never as markup;
//   - shows every state as a word as well as a colour, and is usable by
//     keyboard.
//
// Guarantees of the handler:
//
//   - It serves only the embedded files, GET and HEAD; anything else is
//     405, and a path that names no file is 404.
//   - Every answer carries a Content-Security-Policy that allows scripts,
//     styles and connections from the page's own origin only and no
//     inline script: markup that slipped into the page could still not
//     run. The page is never framed (frame-ancestors 'none') and is not
//     cached (no-store), so a new binary's page is the one shown.
//   - /ui (no slash) redirects to /ui/.
package ui
