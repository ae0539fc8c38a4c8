package proxy

import (
	"strings"

	"google.golang.org/grpc"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// Full gRPC method names the proxy treats specially.
const (
	runtimeService = "/runtime.v1.RuntimeService/"
	imageService   = "/runtime.v1.ImageService/"

	mListPodSandbox     = runtimeService + "ListPodSandbox"
	mListContainers     = runtimeService + "ListContainers"
	mPodSandboxStatus   = runtimeService + "PodSandboxStatus"
	mContainerStatus    = runtimeService + "ContainerStatus"
	mGetContainerEvents = runtimeService + "GetContainerEvents"
)

// cachedReads are the kubelet's relist reads (GenericPLEG.Relist →
// GetPods: ListPodSandbox and ListContainers every second; GetPodStatus:
// PodSandboxStatus and ContainerStatus per changed pod), answered from the
// memo.
var cachedReads = map[string]bool{
	mListPodSandbox:   true,
	mListContainers:   true,
	mPodSandboxStatus: true,
	mContainerStatus:  true,
}

// readOnly are the methods known to change nothing the memo holds. Every
// other method, including ones this build does not know, is treated as a
// change: the memo is dropped before it is forwarded and again when it
// returns.
var readOnly = map[string]bool{
	runtimeService + "Version":                 true,
	runtimeService + "Status":                  true,
	runtimeService + "RuntimeConfig":           true,
	runtimeService + "UpdateRuntimeConfig":     true,
	runtimeService + "ContainerStats":          true,
	runtimeService + "ListContainerStats":      true,
	runtimeService + "StreamContainerStats":    true,
	runtimeService + "PodSandboxStats":         true,
	runtimeService + "ListPodSandboxStats":     true,
	runtimeService + "StreamPodSandboxStats":   true,
	runtimeService + "ListMetricDescriptors":   true,
	runtimeService + "ListPodSandboxMetrics":   true,
	runtimeService + "StreamPodSandboxMetrics": true,
	runtimeService + "ExecSync":                true,
	runtimeService + "Exec":                    true,
	runtimeService + "Attach":                  true,
	runtimeService + "PortForward":             true,
	runtimeService + "ReopenContainerLog":      true,
	// The streaming lists (the kubelet's alpha CRIListStreaming) are
	// forwarded, not cached.
	runtimeService + "StreamPodSandboxes": true,
	runtimeService + "StreamContainers":   true,
	mGetContainerEvents:                   true,
	// Images are not in the memo.
	imageService + "ListImages":   true,
	imageService + "StreamImages": true,
	imageService + "ImageStatus":  true,
	imageService + "ImageFsInfo":  true,
	imageService + "PullImage":    true,
	imageService + "RemoveImage":  true,
}

// invalidates reports whether forwarding method may change what the
// memo holds.
func invalidates(method string) bool {
	return !cachedReads[method] && !readOnly[method]
}

// methodOther is the method label of every call whose method is not in
// this build's CRI: a newer kubelet's method, or one the proxy refuses.
// Labels come from a fixed list so that no caller can add series.
const methodOther = "other"

// methodLabels maps each method of this build's RuntimeService and
// ImageService to its metric label, the method without its service.
var methodLabels = func() map[string]string {
	m := map[string]string{}
	for _, sd := range []grpc.ServiceDesc{runtimeapi.RuntimeService_ServiceDesc, runtimeapi.ImageService_ServiceDesc} {
		svc := "/" + sd.ServiceName + "/"
		for _, md := range sd.Methods {
			m[svc+md.MethodName] = md.MethodName
		}
		for _, st := range sd.Streams {
			m[svc+st.StreamName] = st.StreamName
		}
	}
	return m
}()

// methodLabel is method's value for the method label: its short name if
// this build knows it, else methodOther.
func methodLabel(method string) string {
	if l, ok := methodLabels[method]; ok {
		return l
	}
	return methodOther
}

// isCRI reports whether method belongs to runtime.v1.RuntimeService or
// runtime.v1.ImageService, the only services the proxy forwards. A method
// of theirs this build does not know (a newer kubelet's) is CRI too;
// containerd's own API (containerd.services.*), gRPC health and
// reflection, and anything else are not. The kubelet calls nothing but
// these two services on its runtime endpoint (k8s.io/cri-client).
func isCRI(method string) bool {
	for _, svc := range []string{runtimeService, imageService} {
		if name, ok := strings.CutPrefix(method, svc); ok {
			return isIdent(name)
		}
	}
	return false
}

// isIdent reports whether s is a protobuf identifier, as a method name is.
func isIdent(s string) bool {
	if s == "" {
		return false
	}
	for i, r := range s {
		switch {
		case r == '_', r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z':
		case r >= '0' && r <= '9' && i > 0:
		default:
			return false
		}
	}
	return true
}
