package prober

import (
	"errors"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/probelet/probelet/node"
	"github.com/probelet/probelet/prober/probe"
	"github.com/probelet/probelet/prober/probe/httpprobe"
	"github.com/probelet/probelet/probespec"
)

// handlerKind is which handler a probe uses.
type handlerKind int8

const (
	kindNone handlerKind = iota
	kindHTTP
	kindTCP
	kindGRPC
	kindExec
)

// target is a probe resolved against its pod and container: host, port,
// expanded command. It is prepared once per container instance (and again
// when the pod's addresses change), not per run.
type target struct {
	kind        handlerKind
	containerID string
	// err is why the probe could not be prepared (e.g. an unknown named
	// port); a run then errors, as the kubelet's does.
	err         error
	http        httpprobe.Target
	tcp         probe.TCPTarget
	grpcHost    string
	grpcPort    int
	grpcService string
	execCmd     []string
	timeout     time.Duration
	// origin is the pod origin HTTP, gRPC and TCP-dial probes connect
	// from, pinned by the run; nil for the node's. originText names it
	// for status (applyOrigin).
	origin     *podOrigin
	originText string
	// originFailed: the pod origin could not be tried this time; the next
	// run prepares the target again rather than keep the error.
	originFailed bool
}

// dials reports whether t's probe opens a connection (HTTP, TCP, gRPC).
func (t *target) dials() bool {
	return t.kind == kindHTTP || t.kind == kindTCP || t.kind == kindGRPC
}

// applyOrigin sets where t connects from (Manager.originFor); a pod
// origin that cannot be tried becomes t's error, so nothing is dialled.
func (m *Manager) applyOrigin(t *target, pe *podEntry) {
	if !t.dials() {
		return
	}
	o, text, err := m.originFor(pe)
	t.originText = text
	switch {
	case err != nil && t.err == nil:
		t.err, t.originFailed = err, true
	case err == nil:
		t.origin = o
	}
}

// tcpFrom is t's TCP target with its origin pinned: a copy, as runs of
// one target may overlap; an origin that cannot be pinned is an error.
func (t *target) tcpFrom() (probe.TCPTarget, error) {
	tt := t.tcp
	if t.origin == nil {
		return tt, nil
	}
	ns, err := t.origin.namespace()
	if err != nil {
		return tt, err
	}
	tt.Origin = ns // never a typed nil: ns is set when err is nil
	return tt, nil
}

// prepare resolves p for container c of pod. scope is what the probe may
// dial: a host it refuses or cannot judge yet is an error, so nothing is
// dialed (the pod's spec already lost a refused probe; this holds anyway).
func prepare(p *corev1.Probe, pod *node.Pod, c *node.Container, scope probespec.HostScope) target {
	t := target{containerID: c.ID, timeout: timeout(p)}
	switch h := &p.ProbeHandler; {
	case h.HTTPGet != nil:
		t.kind = kindHTTP
		t.http, t.err = httpTarget(h.HTTPGet, pod, c, scope, t.timeout)
	case h.TCPSocket != nil:
		t.kind = kindTCP
		t.tcp, t.err = tcpTarget(h.TCPSocket, pod, c, scope, t.timeout)
	case h.GRPC != nil:
		t.kind = kindGRPC
		t.grpcHost, t.err = podIP(pod, scope)
		t.grpcPort = int(h.GRPC.Port)
		if h.GRPC.Service != nil {
			t.grpcService = *h.GRPC.Service
		}
	case h.Exec != nil:
		t.kind = kindExec
		t.execCmd = probespec.ExpandCommand(h.Exec.Command, expansionEnv(pod, c))
	default:
		t.err = fmt.Errorf("missing probe handler for %s/%s:%s", pod.Namespace, pod.Name, c.Name)
	}
	return t
}

func httpTarget(a *corev1.HTTPGetAction, pod *node.Pod, c *node.Container, scope probespec.HostScope, timeout time.Duration) (httpprobe.Target, error) {
	t := httpprobe.Target{Scheme: a.Scheme, Path: a.Path, Headers: a.HTTPHeaders, Timeout: timeout}
	var err error
	t.Host, t.Port, err = endpoint(a.Host, a.Port, pod, c, scope)
	return t, err
}

func tcpTarget(a *corev1.TCPSocketAction, pod *node.Pod, c *node.Container, scope probespec.HostScope, timeout time.Duration) (probe.TCPTarget, error) {
	t := probe.TCPTarget{NetNSPath: pod.NetNSPath, Timeout: timeout}
	var err error
	t.Host, t.Port, err = endpoint(a.Host, a.Port, pod, c, scope)
	// ":port" is the node's own address, not the pod's: never answered
	// from the pod's listener table.
	t.InPod = t.Host != "" && (a.Host == "" || slices.Contains(pod.IPs, t.Host))
	return t, err
}

// endpoint resolves an httpGet or tcpSocket action's host and port: the
// port through the container's ports, an empty host to the pod's IP. A
// host is dialed only when scope allows it, and an IP literal in the form
// it was judged in (spec.ParseHostIP), so the check and the dial agree.
func endpoint(host string, port intstr.IntOrString, pod *node.Pod, c *node.Container, scope probespec.HostScope) (string, int, error) {
	n, err := resolvePort(port, c)
	if err != nil {
		return "", 0, err
	}
	if v, why := scope.Judge(host); v != probespec.HostAllowed {
		return "", 0, fmt.Errorf("probe host %q is not dialed: %s", host, why)
	}
	switch addr, ok := probespec.ParseHostIP(host); {
	case host == "":
		host, err = podIP(pod, scope)
	case ok && !scope.Any:
		host = addr.String()
	}
	return host, n, err
}

// resolvePort resolves a (maybe named) port through the container's
// io.kubernetes.container.ports annotation.
func resolvePort(port intstr.IntOrString, c *node.Container) (int, error) {
	n, err := probespec.ResolvePort(port, c.Annotations[probespec.AnnotationContainerPorts])
	if err != nil {
		return 0, fmt.Errorf("container %q: %w", c.Name, err)
	}
	return n, nil
}

// podIP is the default probe host. A host-network pod without an IP (the
// runtime may report none) gives "", as the kubelet's empty status.podIP
// does: it then dials ":port", the node's own addresses. Any other pod
// without a known IP is not probed: ":port" is not the pod.
func podIP(pod *node.Pod, scope probespec.HostScope) (string, error) {
	switch {
	case len(pod.IPs) > 0:
		return pod.IPs[0], nil
	case scope.Any:
		return "", nil
	}
	return "", errNoPodIP
}

// errNoPodIP is a run's error while the pod's IPs are not known.
var errNoPodIP = errors.New("the pod's IP is not known yet; nothing dialed")

// timeout is the probe's timeoutSeconds, defaulted defensively.
func timeout(p *corev1.Probe) time.Duration {
	return time.Duration(positiveOr(p.TimeoutSeconds, probespec.DefaultTimeoutSeconds)) * time.Second
}

// expansionEnv is what $(VAR) in an exec command expands from: the
// container spec's env as the API server gave it, of which ExpandCommand
// reads static values only, like the kubelet. Without the spec (node-only,
// or until the informer has the pod) there is nothing to expand from and
// the references stay as written; the engine prepares the target again
// when the spec arrives. The runtime's environment of the container is
// never used: it holds resolved secretKeyRef values.
func expansionEnv(pod *node.Pod, c *node.Container) []corev1.EnvVar {
	if sc := pod.API.SpecContainer(c.Name); sc != nil {
		return sc.Env
	}
	return nil
}
