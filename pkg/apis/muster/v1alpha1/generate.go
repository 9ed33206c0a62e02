package v1alpha1

// controller-gen, pinned so that every run writes the same files, turns the
// kubebuilder markers of this package into
//   - the DeepCopy methods in zz_generated.deepcopy.go (object), and
//   - the CRDs of Kubernetes mode in config/crd/bases (crd), which
//     test/crd checks are up to date and apply on a real API server.
//
// make generate (or: go generate ./pkg/apis/...)
//go:generate go run sigs.k8s.io/controller-tools/cmd/controller-gen@v0.23.0 object crd paths=. output:crd:artifacts:config=../../../../config/crd/bases
