package plugin

import (
	"testing"

	"github.com/containerd/nri/pkg/api"

	"github.com/probelet/probelet/lifecycle"
)

// containerd lists a sandbox's namespaces, with no network one for a
// hostNetwork pod; no namespaces at all says nothing.
func TestSandboxNetwork(t *testing.T) {
	ns := func(types ...string) []*api.LinuxNamespace {
		var out []*api.LinuxNamespace
		for _, typ := range types {
			out = append(out, &api.LinuxNamespace{Type: typ, Path: "/proc/1/ns/" + typ})
		}
		return out
	}
	for _, tc := range []struct {
		name string
		nss  []*api.LinuxNamespace
		want lifecycle.Network
	}{
		{"own network namespace", ns("pid", "ipc", "uts", "mount", "network"), lifecycle.NetworkPod},
		{"host network", ns("pid", "ipc", "uts", "mount"), lifecycle.NetworkHost},
		{"nothing reported", nil, lifecycle.NetworkUnknown},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sb := sandboxFrom(&api.PodSandbox{Id: "s", Linux: &api.LinuxPodSandbox{Namespaces: tc.nss}})
			if sb.Network != tc.want {
				t.Errorf("network = %v, want %v", sb.Network, tc.want)
			}
		})
	}
}
