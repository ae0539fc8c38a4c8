// Package version carries the build version stamped in by the Makefile.
package version

// Version is set with -ldflags "-X github.com/probelet/probelet/internal/version.Version=...".
var Version = "dev"

// KubeProbeUserAgent is the User-Agent the kubelet v1.37 sends on HTTP and
// gRPC probes; probelet sends the same so apps cannot tell the difference.
const KubeProbeUserAgent = "kube-probe/1.37"
