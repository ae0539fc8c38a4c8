package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/probelet/probelet/probespec"
)

// GroupName is the API's group.
const GroupName = probespec.StateGroup

// SchemeGroupVersion is the group and version of these types.
var SchemeGroupVersion = schema.GroupVersion{Group: GroupName, Version: "v1alpha1"}

// Resource is the API's one resource, podprobes.
var Resource = SchemeGroupVersion.WithResource(probespec.StateResource)

var (
	// SchemeBuilder registers the types; AddToScheme applies it.
	SchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)
	AddToScheme   = SchemeBuilder.AddToScheme
)

func addKnownTypes(scheme *runtime.Scheme) error {
	scheme.AddKnownTypes(SchemeGroupVersion, &PodProbes{}, &PodProbesList{})
	metav1.AddToGroupVersion(scheme, SchemeGroupVersion)
	return nil
}
