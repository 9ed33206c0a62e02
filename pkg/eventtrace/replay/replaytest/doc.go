// Package replaytest holds the test-only half of trace replay: Golden,
// which compares a replay with a golden file and rewrites it under the
// -update flag.
//
// It lives apart from package replay so that programs replaying traces,
// musterd replay among them, link neither package testing nor a global
// -update flag; only test binaries import it.
package replaytest
