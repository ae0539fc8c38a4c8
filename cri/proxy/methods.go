package proxy

import "strings"

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

// shortName is the method without its service, for metric labels and
// logs; a method outside the CRI services keeps its full name.
func shortName(method string) string {
	for _, svc := range []string{runtimeService, imageService} {
		if name, ok := strings.CutPrefix(method, svc); ok {
			return name
		}
	}
	return method
}
