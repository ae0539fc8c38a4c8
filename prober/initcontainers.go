package prober

import (
	"strings"

	"github.com/probelet/probelet/node"
	"github.com/probelet/probelet/probespec"
)

// getsWorkers reports whether the container named name gets probe
// workers. The kubelet's AddPod makes them only for the pod's containers
// and its restartable init containers (sidecars): with the pod spec at
// hand, a plain init container named in the annotation gets none, so it is
// never probed nor killed. Without the spec probelet cannot tell one from
// a container and probes whatever the annotation names.
func getsWorkers(api *node.APIPod, name string) bool {
	_, plain := plainInit(api, name)
	return !plain
}

// plainInit is spec.PlainInitContainer on the pod's API spec, if known.
func plainInit(api *node.APIPod, name string) (int, bool) {
	if api == nil {
		return -1, false
	}
	return probespec.PlainInitContainer(api.Spec, name)
}

// forbiddenInitProbes is why the probes cp gives the plain init container
// at index i of the spec do not run: the API server's Forbidden errors.
func forbiddenInitProbes(i int, cp probespec.ContainerProbes) string {
	errs := probespec.ForbiddenInitProbes(i, cp)
	msgs := make([]string, len(errs))
	for j, e := range errs {
		msgs[j] = e.Error()
	}
	return strings.Join(msgs, "; ")
}
