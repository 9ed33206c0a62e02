// Package kubetest starts a real Kubernetes control plane (kube-apiserver
// and etcd, through sigs.k8s.io/controller-runtime/pkg/envtest) for the
// tests of musterd's Kubernetes mode, with musterd's CRDs from
// config/crd/bases installed.
//
// Place: test support only, beside the pipeline; it imports the API types
// (pkg/apis) for the scheme and nothing else of musterd's.
//
// Guarantees:
//
//   - The binaries are the ones `make envtest-assets` builds from the Go
//     module proxy into bin/k8s/<version>, or those in KUBEBUILDER_ASSETS.
//     When they are missing the test is skipped with a message that says to
//     run `make envtest-assets`, unless MUSTERD_REQUIRE_ENVTEST=1 (set by
//     `make test`), where it fails instead: a suite that must run the
//     Kubernetes tests never passes by skipping them.
//   - [ControlPlane.StopAPIServer] and [ControlPlane.StartAPIServer] take the
//     API server down and back up on the same address with the same serving
//     and client certificates while etcd keeps running, so clients made
//     before the outage work again after it and every object is still there.
//     The stop drains open watches for at most [WatchDrainGracePeriod], so
//     it takes about a second even while informers watch (unbounded, the
//     API server's graceful stop waits out its 1m --request-timeout).
//   - [ControlPlane.AddUser] provisions more users (client certificates with
//     the given groups) for RBAC tests; [ControlPlane.Kubectl] runs the
//     built kubectl as any of them.
//   - On Windows Start skips (kubetest_windows.go): controller-runtime
//     v0.25's envtest does not compile there, so the control plane is
//     !windows and the tests that need it only type-check.
//   - Everything is torn down by t.Cleanup; the control plane's own output
//     goes to a log file in the test's temporary directory, and its last
//     lines are in the error when it fails to start.
//
// Use:
//
//	cp := kubetest.Start(t, kubetest.Options{})
//	cp.Client.Create(ctx, &v1alpha1.MCPServer{…}) // or cp.Config for any client
//	cp.StopAPIServer(t)                           // an outage; etcd keeps the data
//	cp.StartAPIServer(t)                          // same address, same certificates
//	reader := cp.AddUser(t, "reader", "readers")  // bind RBAC to user or group
//	out, err := cp.Kubectl(ctx, t, reader, "get", "mcps", "-A")
//
// A control plane starts in about 3 s on a 2-core machine, a restart of the
// API server about 1 s with informers watching, and its restart about 2 s; share one among the subtests of a package
// where they can work in namespaces of their own.
package kubetest
