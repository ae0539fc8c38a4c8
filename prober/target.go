package prober

import (
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/probelet/probelet/node"
	"github.com/probelet/probelet/prober/probe"
	"github.com/probelet/probelet/prober/probe/httpprobe"
	"github.com/probelet/probelet/prober/spec"
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
}

// prepare resolves p for container c of pod.
func prepare(p *corev1.Probe, pod *node.Pod, c *node.Container) target {
	t := target{containerID: c.ID, timeout: timeout(p)}
	switch h := &p.ProbeHandler; {
	case h.HTTPGet != nil:
		t.kind = kindHTTP
		t.http, t.err = httpTarget(h.HTTPGet, pod, c, t.timeout)
	case h.TCPSocket != nil:
		t.kind = kindTCP
		t.tcp, t.err = tcpTarget(h.TCPSocket, pod, c, t.timeout)
	case h.GRPC != nil:
		t.kind = kindGRPC
		t.grpcHost, t.err = podIP(pod)
		t.grpcPort = int(h.GRPC.Port)
		if h.GRPC.Service != nil {
			t.grpcService = *h.GRPC.Service
		}
	case h.Exec != nil:
		t.kind = kindExec
		t.execCmd = spec.ExpandCommand(h.Exec.Command, expansionEnv(pod, c))
	default:
		t.err = fmt.Errorf("missing probe handler for %s/%s:%s", pod.Namespace, pod.Name, c.Name)
	}
	return t
}

func httpTarget(a *corev1.HTTPGetAction, pod *node.Pod, c *node.Container, timeout time.Duration) (httpprobe.Target, error) {
	t := httpprobe.Target{Scheme: a.Scheme, Path: a.Path, Headers: a.HTTPHeaders, Timeout: timeout}
	var err error
	t.Host, t.Port, err = endpoint(a.Host, a.Port, pod, c)
	return t, err
}

func tcpTarget(a *corev1.TCPSocketAction, pod *node.Pod, c *node.Container, timeout time.Duration) (probe.TCPTarget, error) {
	t := probe.TCPTarget{NetNSPath: pod.NetNSPath, Timeout: timeout}
	var err error
	t.Host, t.Port, err = endpoint(a.Host, a.Port, pod, c)
	// ":port" is the node's own address, not the pod's: never answered
	// from the pod's listener table.
	t.InPod = t.Host != "" && (a.Host == "" || slices.Contains(pod.IPs, a.Host))
	return t, err
}

// endpoint resolves an httpGet or tcpSocket action's host and port: the
// port through the container's ports, an empty host to the pod's IP.
func endpoint(host string, port intstr.IntOrString, pod *node.Pod, c *node.Container) (string, int, error) {
	n, err := resolvePort(port, c)
	if err != nil {
		return host, 0, err
	}
	if host == "" {
		host, err = podIP(pod)
	}
	return host, n, err
}

// resolvePort resolves a (maybe named) port through the container's
// io.kubernetes.container.ports annotation.
func resolvePort(port intstr.IntOrString, c *node.Container) (int, error) {
	n, err := spec.ResolvePort(port, c.Annotations[spec.AnnotationContainerPorts])
	if err != nil {
		return 0, fmt.Errorf("container %q: %w", c.Name, err)
	}
	return n, nil
}

// podIP is the default probe host. A pod without an IP (the runtime
// reports none for a host-network pod) gives "", as the kubelet's empty
// status.podIP does: it then dials ":port", the node's own addresses.
func podIP(pod *node.Pod) (string, error) {
	if len(pod.IPs) == 0 {
		return "", nil
	}
	return pod.IPs[0], nil
}

// timeout is the probe's timeoutSeconds, defaulted defensively.
func timeout(p *corev1.Probe) time.Duration {
	return time.Duration(positiveOr(p.TimeoutSeconds, spec.DefaultTimeoutSeconds)) * time.Second
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
