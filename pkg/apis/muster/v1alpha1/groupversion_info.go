package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// GroupName is the API group of muster's resources.
const GroupName = "muster.giantswarm.io"

// GroupVersion is the group and version of every type in this package.
var GroupVersion = schema.GroupVersion{Group: GroupName, Version: "v1alpha1"}

// APIVersion is GroupVersion as documents spell it in their apiVersion.
const APIVersion = GroupName + "/v1alpha1"

// Kinds of the resources in this package.
const (
	KindMCPServer = "MCPServer"
	KindWorkflow  = "Workflow"
)

var (
	// SchemeBuilder registers this package's types with a runtime.Scheme.
	SchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)
	// AddToScheme adds this package's types to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

func addKnownTypes(scheme *runtime.Scheme) error {
	scheme.AddKnownTypes(GroupVersion,
		&MCPServer{}, &MCPServerList{},
		&Workflow{}, &WorkflowList{},
	)
	metav1.AddToGroupVersion(scheme, GroupVersion)
	return nil
}
