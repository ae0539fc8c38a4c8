package prober

import (
	"errors"
	"fmt"
	"net/netip"

	"go.uber.org/zap"

	"github.com/probelet/probelet/node"
	"github.com/probelet/probelet/podnet"
	"github.com/probelet/probelet/probespec"
)

// podNet is a pod's pinned network namespace, for probes from its origin.
type podNet struct {
	ns            *podnet.Namespace
	sandbox, path string
	// refused is why the sandbox's probes are never dialled from its
	// namespace again: its namespace changed under it.
	refused error
	// badTold is set once an invalid probelet.io/probe-origin was logged.
	badTold bool
}

// release lets the pod's namespace go (the pod is gone).
func (pn *podNet) release() {
	if pn.ns != nil {
		_ = pn.ns.Close()
		pn.ns = nil
	}
}

// origin is where pe's HTTP, gRPC and TCP-dial probes connect from, and
// how status names it: "node", "node (…why…)" or "pod net:[INODE]". A
// pod-origin probe whose namespace cannot be used gets err, a prober
// error: nothing is dialled from anywhere else instead.
func (m *Manager) origin(pe *podEntry) (ns *podnet.Namespace, text string, err error) {
	o, bad := probespec.PodOrigin(pe.pod.Annotations, m.probeOrigin)
	var note string
	if bad != nil {
		note = fmt.Sprintf(" (%v: the node's --probe-origin applies)", bad)
		if !pe.net.badTold {
			pe.net.badTold = true
			m.log.Warn("Invalid probe origin", zap.String("pod", pe.pod.Namespace+"/"+pe.pod.Name),
				zap.String("podUID", pe.pod.UID), zap.Error(bad), zap.String("origin", string(o)))
		}
	}
	if o == probespec.OriginPod && hostNetworkPod(&pe.pod) {
		o, note = probespec.OriginNode, " (hostNetwork: the pod's namespace is the node's)"
	}
	if o != probespec.OriginPod {
		return nil, string(o) + note, nil
	}
	ns, err = m.podNamespace(pe)
	if err != nil {
		return nil, string(o), err
	}
	return ns, string(o) + " " + ns.String(), nil
}

func firstIP(ips []string) string {
	if len(ips) == 0 {
		return ""
	}
	return ips[0]
}

// hostNetworkPod reports whether pod runs in the node's network namespace.
func hostNetworkPod(pod *node.Pod) bool {
	a := pod.API
	return pod.HostNetwork || (a != nil && a.Spec != nil && a.Spec.HostNetwork)
}

// errNoNetNS is a pod-origin probe's error while the runtime has not said
// where the pod's network namespace is.
var errNoNetNS = errors.New("the pod's network namespace is not known yet; nothing dialled")

// podNamespace pins pe's network namespace at its first use. A later path
// must name the same namespace: one that names another is refused for
// good, as a sandbox's namespace never changes. A new sandbox of the pod
// (the old one died and was recreated) has a namespace of its own, pinned
// afresh.
func (m *Manager) podNamespace(pe *podEntry) (*podnet.Namespace, error) {
	pn := &pe.net
	if pn.sandbox != pe.pod.SandboxID {
		pn.release()
		*pn = podNet{sandbox: pe.pod.SandboxID, badTold: pn.badTold}
	}
	switch path := pe.pod.NetNSPath; {
	case pn.refused != nil:
		return nil, pn.refused
	case pn.ns != nil && pn.path == path:
		return pn.ns, nil
	case path == "":
		return nil, errNoNetNS
	case m.pins == nil:
		return nil, fmt.Errorf("probes from the pod's network namespace are not available: %w", m.pinsErr)
	}
	ip, err := netip.ParseAddr(firstIP(pe.pod.IPs))
	if err != nil {
		return nil, errNoPodIP
	}
	ns, err := m.pins.Open(pe.pod.SandboxID, pe.pod.NetNSPath, ip)
	if err != nil {
		return nil, fmt.Errorf("the pod's network namespace: %w", err)
	}
	if pn.ns != nil && ns.ID() != pn.ns.ID() {
		_ = ns.Close()
		pn.refused = fmt.Errorf("the sandbox's network namespace changed from %s (%s) to %s (%s): not dialled from either", pn.ns, pn.path, ns, pe.pod.NetNSPath)
		pn.release()
		m.log.Warn("Probes from the pod's network namespace refused", zap.String("pod", pe.pod.Namespace+"/"+pe.pod.Name),
			zap.String("podUID", pe.pod.UID), zap.Error(pn.refused))
		return nil, pn.refused
	}
	pn.release()
	pn.ns, pn.path = ns, pe.pod.NetNSPath
	return ns, nil
}
