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
		// CRI-O pins the node's namespace for a hostNetwork pod and lists
		// it: a namespace file proves nothing (it can be mounted over).
		{"the node's namespace listed", []*api.LinuxNamespace{{Type: "network", Path: "/proc/self/ns/net"}}, lifecycle.NetworkPod},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sb := sandboxFrom(&api.PodSandbox{Id: "s", Linux: &api.LinuxPodSandbox{Namespaces: tc.nss}})
			if sb.Network != tc.want {
				t.Errorf("network = %v, want %v", sb.Network, tc.want)
			}
		})
	}
}

// containerFrom takes the image from the NRI message, else from the
// runtime's annotation: containerd's, or CRI-O's (whose NRI sends none).
func TestContainerImage(t *testing.T) {
	for _, tc := range []struct {
		name string
		ctr  *api.Container
		want string
	}{
		{"from NRI", &api.Container{Id: "c"}, ""},
		{"containerd's annotation", &api.Container{Annotations: map[string]string{"io.kubernetes.cri.image-name": "docker.io/library/nginx:1"}}, "docker.io/library/nginx:1"},
		{"CRI-O's annotation", &api.Container{Annotations: map[string]string{"io.kubernetes.cri-o.Image": "localhost/app:v2"}}, "localhost/app:v2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := containerFrom(tc.ctr).Image; got != tc.want {
				t.Errorf("image = %q, want %q", got, tc.want)
			}
		})
	}
}
