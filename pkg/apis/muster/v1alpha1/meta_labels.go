package v1alpha1

// MetaKeyLabels is the key, in a tool's _meta, of its discovery labels:
// a Workflow's metadata.labels on its workflow_<name> tool, which
// filter_tools facets on. muster's key, so that its clients read the same.
const MetaKeyLabels = "muster.giantswarm.io/labels"
