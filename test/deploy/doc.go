// Package deploy holds the tests of the kustomize manifests in config/:
// config/default renders with kustomize's own Go API, every object decodes
// strictly into its Kubernetes type, the RBAC grants exactly the verbs
// musterd needs and no wildcard, the Deployment runs musterd in Kubernetes
// mode with leader election, probes and a locked-down security context, and
// the rendered objects apply to a real API server (internal/kubetest),
// where the ServiceAccount can do what musterd does and nothing more.
//
// It has no code of its own; this file only documents the package.
package deploy
