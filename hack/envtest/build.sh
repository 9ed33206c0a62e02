#!/bin/sh
# Builds the control-plane binaries that sigs.k8s.io/controller-runtime/pkg/envtest
# runs (kube-apiserver, etcd) plus kubectl, from the Go module proxy: no
# prebuilt binary can be downloaded on musterd's build machines.
#
# Usage: hack/envtest/build.sh OUTDIR
#
# This directory is its own Go module (go.mod here), so the main module's
# `go test ./...` and `go vet ./...` never descend into it. Its go.mod requires
# k8s.io/kubernetes at KUBE_VERSION and replaces each staging module, which
# k8s.io/kubernetes's own go.mod points at ./staging/..., with the published
# v0.<minor>.<patch> release; go.sum pins every byte. etcd is built from here
# too, at the version k8s.io/kubernetes requires: its own replace directives
# break `go install go.etcd.io/etcd/server/v3@...`.
set -eu

KUBE_VERSION=v1.37.0
out=${1:?usage: build.sh OUTDIR}
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$out"
out=$(cd "$out" && pwd)

# Without these stamps the binaries report v0.0.0-master, and clients that
# check the server's version (kubectl's skew warning) complain.
major=$(echo "$KUBE_VERSION" | sed 's/^v\([0-9]*\)\..*/\1/')
minor=$(echo "$KUBE_VERSION" | sed 's/^v[0-9]*\.\([0-9]*\)\..*/\1/')
build_date=$(date -u +%Y-%m-%dT%H:%M:%SZ)
ldflags="-s -w"
for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
	ldflags="$ldflags -X $pkg.gitVersion=$KUBE_VERSION -X $pkg.gitMajor=$major -X $pkg.gitMinor=$minor"
	ldflags="$ldflags -X $pkg.gitTreeState=clean -X $pkg.buildDate=$build_date"
done

cd "$here"
export CGO_ENABLED=0 GOFLAGS=-mod=readonly GOWORK=off
go build -trimpath -ldflags "$ldflags" -o "$out/kube-apiserver" k8s.io/kubernetes/cmd/kube-apiserver
go build -trimpath -ldflags "$ldflags" -o "$out/kubectl" k8s.io/kubernetes/cmd/kubectl
go build -trimpath -ldflags "-s -w" -o "$out/etcd" go.etcd.io/etcd/server/v3
"$out/kube-apiserver" --version
"$out/etcd" --version | head -1
