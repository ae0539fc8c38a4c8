package prober

import (
	"errors"
	"fmt"
	"net/netip"
	"sync"
	"sync/atomic"

	"go.uber.org/zap"

	"github.com/probelet/probelet/node"
	"github.com/probelet/probelet/podnet"
	"github.com/probelet/probelet/probespec"
)

// Where a pod's HTTP, gRPC and TCP-dial probes connect from: decided
// under the engine's lock when a target is prepared (no system call),
// the pod's namespace pinned at the first run that needs it, off the
// lock (pinning opens and checks it: system calls).

// podNet is a pod's network namespace for probes from its origin: pinned
// by the first run that needs it, released with the pod. Runs, the
// killer and the engine share it; it has a lock of its own, taken after
// the engine's when both are held (never the other way round).
type podNet struct {
	pins *podnet.Pins
	log  *zap.Logger
	pod  string // namespace/name, for the log

	mu            sync.Mutex
	sandbox, path string
	ns            *podnet.Namespace
	// refused is why the sandbox's probes are never dialled from its
	// namespace again: its namespace changed under it.
	refused error
	closed  bool
	// pinned is ns, for status to read without the lock.
	pinned atomic.Pointer[podnet.Namespace]
}

// nsWant is what a run asks of its pod's podNet: the sandbox, namespace
// file and address its target was prepared with.
type nsWant struct {
	sandbox, path string
	ip            netip.Addr
}

// podOrigin is a target's pod origin: where to pin, what to pin.
type podOrigin struct {
	net  *podNet
	want nsWant
}

// namespace is the origin's pinned namespace, pinned now if it is not.
func (o *podOrigin) namespace() (*podnet.Namespace, error) {
	return o.net.namespace(o.want)
}

// errPodGone is a run whose pod was removed while it ran.
var errPodGone = errors.New("the pod is gone; nothing dialled")

// namespace pins w's namespace at its first use. A later path must name
// the same namespace: one that names another is refused for good, as a
// sandbox's namespace never changes. A new sandbox of the pod (the old
// one died and was recreated) has a namespace of its own, pinned afresh.
// A pin that failed is tried again at the next run.
func (pn *podNet) namespace(w nsWant) (*podnet.Namespace, error) {
	pn.mu.Lock()
	defer pn.mu.Unlock()
	if pn.closed {
		return nil, errPodGone
	}
	if pn.sandbox != w.sandbox {
		pn.releaseLocked()
		pn.sandbox, pn.path, pn.refused = w.sandbox, "", nil
	}
	switch {
	case pn.refused != nil:
		return nil, pn.refused
	case pn.ns != nil && pn.path == w.path:
		return pn.ns, nil
	}
	ns, err := pn.pins.Open(w.sandbox, w.path, w.ip)
	if err != nil {
		return nil, fmt.Errorf("the pod's network namespace: %w", err)
	}
	if pn.ns != nil && ns.ID() != pn.ns.ID() {
		_ = ns.Close()
		pn.refused = fmt.Errorf("the sandbox's network namespace changed from %s (%s) to %s (%s): not dialled from either", pn.ns, pn.path, ns, w.path)
		pn.releaseLocked()
		pn.log.Warn("Probes from the pod's network namespace refused", zap.String("pod", pn.pod), zap.Error(pn.refused))
		return nil, pn.refused
	}
	pn.releaseLocked()
	pn.ns, pn.path = ns, w.path
	pn.pinned.Store(ns)
	return ns, nil
}

func (pn *podNet) releaseLocked() {
	if pn.ns != nil {
		_ = pn.ns.Close()
		pn.ns = nil
		pn.pinned.Store(nil)
	}
}

// close releases the namespace for good (the pod is gone). It waits for
// a pin in progress, so the engine calls it off its lock.
func (pn *podNet) close() {
	pn.mu.Lock()
	defer pn.mu.Unlock()
	pn.closed = true
	pn.releaseLocked()
}

// originFor decides where pe's HTTP, gRPC and TCP-dial probes connect
// from, without a system call: nil for the node's namespace, else the
// pod origin to pin at the run; text names it for status ("node", "node
// (…why…)", "pod"); err is why a pod origin cannot be tried at all (a
// prober error: nothing is dialled from anywhere else instead).
func (m *Manager) originFor(pe *podEntry) (o *podOrigin, text string, err error) {
	want, bad := probespec.PodOrigin(pe.pod.Annotations, m.probeOrigin)
	var note string
	if bad != nil {
		note = fmt.Sprintf(" (%v: the node's --probe-origin applies)", bad)
		if !pe.badOriginTold {
			pe.badOriginTold = true
			m.log.Warn("Invalid probe origin", zap.String("pod", pe.pod.Namespace+"/"+pe.pod.Name),
				zap.String("podUID", pe.pod.UID), zap.Error(bad), zap.String("origin", string(want)))
		}
	}
	if want == probespec.OriginPod && hostNetworkPod(&pe.pod) {
		want, note = probespec.OriginNode, " (hostNetwork: the pod's namespace is the node's)"
	}
	if want != probespec.OriginPod {
		return nil, string(want) + note, nil
	}
	ip, ipErr := netip.ParseAddr(firstIP(pe.pod.IPs))
	switch {
	case m.pins == nil:
		return nil, string(want), fmt.Errorf("probes from the pod's network namespace are not available: %w", m.pinsErr)
	case pe.pod.NetNSPath == "":
		return nil, string(want), errNoNetNS
	case ipErr != nil:
		return nil, string(want), errNoPodIP
	}
	if pe.net == nil {
		pe.net = &podNet{pins: m.pins, log: m.log, pod: pe.pod.Namespace + "/" + pe.pod.Name}
	}
	return &podOrigin{net: pe.net, want: nsWant{sandbox: pe.pod.SandboxID, path: pe.pod.NetNSPath, ip: ip}}, string(want), nil
}

// originText is w's origin as status shows it: with the namespace once
// it is pinned.
func originText(w *worker) string {
	if w.origin != string(probespec.OriginPod) || w.pod.net == nil {
		return w.origin
	}
	if ns := w.pod.net.pinned.Load(); ns != nil {
		return w.origin + " " + ns.String()
	}
	return w.origin
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
