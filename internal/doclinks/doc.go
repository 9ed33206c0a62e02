// Package doclinks holds the test that keeps the documentation's links
// whole: every relative link in README.md and docs/*.md must name a file
// that exists and, with a #fragment, a heading of that file.
//
// Place: test only; it imports nothing of musterd's and nothing imports it.
// The README is the front door and docs/ the reference, each page linked
// from it and from each other; a page renamed or a heading reworded would
// otherwise leave links that lead nowhere, unnoticed.
package doclinks
