#!/bin/sh
# Builds Dex, the OpenID Connect provider that internal/dextest runs for the
# OAuth tests, from the Go module proxy: Dex publishes no Go-installable
# release (its module path has no /v2, so its v2.x tags are not valid module
# versions), and no prebuilt binary can be downloaded on musterd's build
# machines.
#
# Usage: hack/dex/build.sh OUTDIR
#
# This directory is its own Go module (go.mod here), so the main module's
# `go test ./...` and `go vet ./...` never descend into it and Dex's many
# requirements stay out of musterd's go.mod. go.mod requires Dex at the
# pseudo-version of its tag v2.45.1 (commit 11d2eeb52b42, 2026-03-03), which
# the proxy serves; go.sum pins every byte.
set -eu

out=${1:?usage: build.sh OUTDIR}
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$out"
out=$(cd "$out" && pwd)

DEX_VERSION=v2.45.1

cd "$here"
export CGO_ENABLED=0 GOFLAGS=-mod=readonly GOWORK=off
go build -trimpath -ldflags "-s -w -X main.version=$DEX_VERSION" -o "$out/dex" github.com/dexidp/dex/cmd/dex
"$out/dex" version
