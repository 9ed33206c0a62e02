// Package crd holds the tests of musterd's CRDs in config/crd/bases: that
// they are what controller-gen makes of pkg/apis/muster/v1alpha1 today,
// how they differ from muster's CRDs (each difference listed and justified),
// and, on a real API server (internal/kubetest), that every muster example
// applies, that invalid resources are refused with the reason, and that
// kubectl shows the printer columns.
//
// It has no code of its own; this file only documents the package.
package crd
