// Package endpoint is the one reading of the unix socket endpoints probelet
// is given (--runtime-endpoint, --listen, `probelet cri-proxy --listen`,
// probectl's --socket) and the one gRPC connection set-up for a CRI runtime.
package endpoint

import (
	"fmt"
	"path/filepath"
	"strings"
)

// Containerd is containerd's CRI socket, the default runtime endpoint.
const Containerd = "unix:///run/containerd/containerd.sock"

// UnixPath returns the socket path of endpoint. The rule, the same for
// every flag: "unix:///absolute/path", or a bare absolute path (the
// kubelet's and crictl's fallback for an endpoint without a scheme). The
// path is cleaned; any other scheme, a relative path or an empty endpoint
// is an error naming the endpoint.
func UnixPath(endpoint string) (string, error) {
	path, ok := strings.CutPrefix(endpoint, "unix://")
	switch {
	case !ok && strings.Contains(endpoint, "://"):
		return "", fmt.Errorf("%q: only unix:// endpoints are supported", endpoint)
	case !filepath.IsAbs(path):
		return "", fmt.Errorf("%q is not unix:///absolute/path: the socket path must be absolute", endpoint)
	}
	return filepath.Clean(path), nil
}

// Same reports whether two endpoints name the same socket (both valid).
func Same(a, b string) bool {
	pa, errA := UnixPath(a)
	pb, errB := UnixPath(b)
	return errA == nil && errB == nil && pa == pb
}
