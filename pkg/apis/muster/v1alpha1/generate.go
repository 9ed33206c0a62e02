package v1alpha1

// The DeepCopy methods in zz_generated.deepcopy.go come from controller-gen's
// object generator, pinned so that every run writes the same file:
// go generate ./pkg/apis/...
//go:generate go run sigs.k8s.io/controller-tools/cmd/controller-gen@v0.23.0 object paths=.
