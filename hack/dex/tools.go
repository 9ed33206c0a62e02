//go:build tools

// Package tools pins Dex, the OpenID Connect provider the tests log users in
// with, as a requirement of this wrapper module: Dex's own go.mod replaces
// its api/v2 module with a local path, which only a module that requires Dex
// (rather than `go install dex@...`) can build past.
package tools

import _ "github.com/dexidp/dex/cmd/dex"
