package prober

import (
	"context"
	"errors"
	"net/netip"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/probelet/probelet/node"
	"github.com/probelet/probelet/prober/probe"
	"github.com/probelet/probelet/prober/probe/httpprobe"
	"github.com/probelet/probelet/probespec"
)

func prepPod() (*node.Pod, *node.Container) {
	pod := &node.Pod{
		UID: "u", Name: "web", Namespace: "ns", IPs: []string{"10.0.0.5", "fd00::5"}, NetNSPath: "/proc/42/ns/net",
		API: &node.APIPod{Spec: &corev1.PodSpec{Containers: []corev1.Container{{Name: "app",
			Env: []corev1.EnvVar{{Name: "DIR", Value: "/tmp"}, {Name: "FILE", Value: "ready"}}}}}},
	}
	c := &node.Container{
		ID: "c1", Name: "app",
		Annotations: map[string]string{probespec.AnnotationContainerPorts: `[{"name":"http","containerPort":8080,"protocol":"TCP"}]`},
	}
	return pod, c
}

func handler(h corev1.ProbeHandler) *corev1.Probe {
	return &corev1.Probe{ProbeHandler: h, TimeoutSeconds: 3}
}

func TestPrepareResolvesTargetsLikeTheKubelet(t *testing.T) {
	pod, c := prepPod()
	cases := []struct {
		name string
		p    *corev1.Probe
		want target
	}{
		{"HTTP host defaults to the pod IP; named port from the container ports",
			handler(corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/ready", Port: intstr.FromString("http"), Scheme: corev1.URISchemeHTTPS}}),
			target{kind: kindHTTP, http: httpprobe.Target{Scheme: corev1.URISchemeHTTPS, Host: "10.0.0.5", Port: 8080, Path: "/ready", Timeout: 3 * time.Second}}},
		{"HTTP host field wins, as the address it was judged",
			handler(corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Host: "[FD00::5]", Port: intstr.FromInt32(81)}}),
			target{kind: kindHTTP, http: httpprobe.Target{Host: "fd00::5", Port: 81, Timeout: 3 * time.Second}}},
		{"TCP without host is in the pod",
			handler(corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromString("http")}}),
			target{kind: kindTCP, tcp: probe.TCPTarget{Host: "10.0.0.5", Port: 8080, InPod: true, NetNSPath: "/proc/42/ns/net", Timeout: 3 * time.Second}}},
		{"TCP to one of the pod's IPs is in the pod",
			handler(corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Host: "fd00::5", Port: intstr.FromInt32(9)}}),
			target{kind: kindTCP, tcp: probe.TCPTarget{Host: "fd00::5", Port: 9, InPod: true, NetNSPath: "/proc/42/ns/net", Timeout: 3 * time.Second}}},
		{"TCP to one of the pod's IPs, mapped, is in the pod",
			handler(corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Host: "::ffff:10.0.0.5", Port: intstr.FromInt32(9)}}),
			target{kind: kindTCP, tcp: probe.TCPTarget{Host: "10.0.0.5", Port: 9, InPod: true, NetNSPath: "/proc/42/ns/net", Timeout: 3 * time.Second}}},
		{"gRPC goes to the pod IP with its service",
			handler(corev1.ProbeHandler{GRPC: &corev1.GRPCAction{Port: 50051, Service: ptr.To("api")}}),
			target{kind: kindGRPC, grpcHost: "10.0.0.5", grpcPort: 50051, grpcService: "api"}},
		{"exec expands $(VAR) from the container spec's env only",
			handler(corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"cat", "$(DIR)/$(FILE)", "$(HOME)"}}}),
			target{kind: kindExec, execCmd: []string{"cat", "/tmp/ready", "$(HOME)"}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := prepare(tc.p, pod, c, ownScope(pod))
			tc.want.containerID, tc.want.timeout = "c1", 3*time.Second
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("prepare =\n %+v\nwant\n %+v", got, tc.want)
			}
		})
	}
}

func TestPrepareErrorsAreNamed(t *testing.T) {
	pod, c := prepPod()
	cases := []struct {
		name string
		pod  *node.Pod
		p    *corev1.Probe
		want string
	}{
		{"unknown named port", pod, handler(corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromString("metrics")}}), `container "app": port "metrics" not found`},
		{"no handler", pod, handler(corev1.ProbeHandler{}), "missing probe handler for ns/web:app"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := prepare(tc.p, tc.pod, c, ownScope(tc.pod))
			if got.err == nil || !strings.Contains(got.err.Error(), tc.want) {
				t.Fatalf("err = %v, want it to contain %q", got.err, tc.want)
			}
		})
	}
}

// recorder is a handlers set that records what it was asked to probe.
type recorder struct {
	mu    sync.Mutex
	calls []string
	res   probe.Result
	err   error
}

func (r *recorder) note(call string) (probe.Result, string, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls = append(r.calls, call)
	return r.res, "", r.err
}

func (r *recorder) handlers() handlers {
	return handlers{
		http: func(_ context.Context, t httpprobe.Target) (probe.Result, string, error) {
			return r.note("http " + t.Host)
		},
		grpc: func(_ context.Context, host string, _ int, svc string, _ time.Duration) (probe.Result, string, error) {
			return r.note("grpc " + host + " " + svc)
		},
		exec: func(_ context.Context, id string, cmd []string, _ time.Duration) (probe.Result, string, error) {
			return r.note("exec " + id + " " + strings.Join(cmd, " "))
		},
		tcp: r,
	}
}

func (r *recorder) ProbeTCP(_ context.Context, t probe.TCPTarget) (probe.Result, string, probe.Method, error) {
	res, out, err := r.note("tcp " + t.Host)
	return res, out, probe.MethodEBPF, err
}

func TestHandlerSelectionPicksTheProbesHandler(t *testing.T) {
	pod, c := prepPod()
	cases := []struct {
		p          *corev1.Probe
		wantCall   string
		wantMethod probe.Method
	}{
		{handler(corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Port: intstr.FromInt32(80)}}), "http 10.0.0.5", probe.MethodHTTP},
		{handler(corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(80)}}), "tcp 10.0.0.5", probe.MethodEBPF},
		{handler(corev1.ProbeHandler{GRPC: &corev1.GRPCAction{Port: 80}}), "grpc 10.0.0.5 ", probe.MethodGRPC},
		{handler(corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"true"}}}), "exec c1 true", probe.MethodExec},
	}
	for _, tc := range cases {
		t.Run(string(tc.wantMethod), func(t *testing.T) {
			r := &recorder{res: probe.Success}
			h := r.handlers()
			tgt := prepare(tc.p, pod, c, ownScope(pod))
			res, _, method, err := h.runWithRetries(context.Background(), &tgt)
			if err != nil || res != probe.Success || method != tc.wantMethod {
				t.Fatalf("run = %v, %v, %v", res, method, err)
			}
			if len(r.calls) != 1 || r.calls[0] != tc.wantCall {
				t.Fatalf("calls = %q, want [%q]", r.calls, tc.wantCall)
			}
		})
	}
}

func TestRetriesStopWhenTheProbeIsCancelled(t *testing.T) {
	pod, c := prepPod()
	r := &recorder{res: probe.Unknown, err: errors.New("broken")}
	h := r.handlers()
	tgt := prepare(handler(corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"true"}}}), pod, c, ownScope(pod))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, _, _, err := h.runWithRetries(ctx, &tgt); err == nil {
		t.Fatal("want the error")
	}
	if len(r.calls) != 1 {
		t.Fatalf("calls after cancel = %d, want 1", len(r.calls))
	}
}

func TestPreparationErrorIsRetriedAndReported(t *testing.T) {
	pod, c := prepPod()
	r := &recorder{res: probe.Success}
	h := r.handlers()
	tgt := prepare(handler(corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromString("nope")}}), pod, c, ownScope(pod))
	res, _, method, err := h.runWithRetries(context.Background(), &tgt)
	if err == nil || res != probe.Unknown || method != probe.MethodDial || len(r.calls) != 0 {
		t.Fatalf("run = %v, %v, %v with %d handler calls", res, method, err, len(r.calls))
	}
}

// A host-network pod without an IP resolves to the empty host, as the
// kubelet's empty status.podIP does; a TCP probe of it dials ":port" on
// the node and is never answered from the pod's listener table. Any other
// pod without a known IP is not probed: ":port" is the node, not the pod.
func TestPrepareWithoutPodIP(t *testing.T) {
	pod, c := prepPod()
	pod.IPs = nil
	port := intstr.FromInt32(80)
	for name, p := range map[string]*corev1.Probe{
		"http": handler(corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Port: port}}),
		"tcp":  handler(corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: port}}),
		"grpc": handler(corev1.ProbeHandler{GRPC: &corev1.GRPCAction{Port: 80}}),
	} {
		got := prepare(p, pod, c, probespec.HostScope{Any: true})
		if got.err != nil || got.http.Host != "" || got.tcp.Host != "" || got.grpcHost != "" || got.tcp.InPod {
			t.Errorf("%s, host network: target %+v, want the empty host, no error, not in the pod", name, got)
		}
		if got := prepare(p, pod, c, ownScope(pod)); !errors.Is(got.err, errNoPodIP) {
			t.Errorf("%s, pod network: err = %v, want %v", name, got.err, errNoPodIP)
		}
	}
}

// A host the scope refuses, or cannot judge yet, is never a target: the
// run errors before any handler is reached.
func TestPrepareRefusesHostsOutsideThePod(t *testing.T) {
	pod, c := prepPod()
	port := intstr.FromInt32(80)
	allowed := probespec.HostScope{PodIPs: pod.IPs, CIDRs: []netip.Prefix{netip.MustParsePrefix("192.168.0.0/16")}}
	cases := []struct {
		name  string
		host  string
		scope probespec.HostScope
		want  string // "" when the target is made, with that host
		dial  string
	}{
		{"node loopback", "127.0.0.1", ownScope(pod), "not dialed", ""},
		{"loopback with leading zeros", "127.000.000.001", ownScope(pod), "a hostname is never one", ""},
		{"metadata", "metadata.google.internal", ownScope(pod), "a hostname is never one", ""},
		{"pod IPs unknown", "10.0.0.5", probespec.HostScope{}, "waits for the pod's IPs", ""},
		{"namespace labels unknown", "127.0.0.1", probespec.HostScope{PodIPs: pod.IPs, Undecided: true}, "waits for the pod's namespace labels", ""},
		{"in an allowed CIDR", "192.168.1.1", allowed, "", "192.168.1.1"},
		{"host network dials as written", "localhost", probespec.HostScope{Any: true}, "", "localhost"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			for kind, p := range map[string]*corev1.Probe{
				"http": handler(corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Host: tc.host, Port: port}}),
				"tcp":  handler(corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Host: tc.host, Port: port}}),
			} {
				got := prepare(p, pod, c, tc.scope)
				if tc.want == "" {
					if got.err != nil || got.http.Host+got.tcp.Host != tc.dial {
						t.Errorf("%s: target %+v, want host %q", kind, got, tc.dial)
					}
					continue
				}
				if got.err == nil || !strings.Contains(got.err.Error(), tc.want) || got.http.Host+got.tcp.Host != "" {
					t.Errorf("%s: target %+v (err %v), want no host and an error containing %q", kind, got, got.err, tc.want)
				}
			}
		})
	}
}

// The kubelet's TestGetTCPAddrParts: before its TCP prober is reached,
// ResolveContainerPort errors on a port out of 1-65535, a named one whose
// containerPort is impossible included; the run errors (and is discarded),
// it does not fail.
func TestPrepareTCPPortOutOfRangeErrors(t *testing.T) {
	pod, c := prepPod()
	c.Annotations = map[string]string{probespec.AnnotationContainerPorts: `[{"name":"bad","containerPort":-1,"protocol":"TCP"}]`}
	for _, port := range []intstr.IntOrString{intstr.FromInt32(-1), intstr.FromString("-1"), intstr.FromString("bad"), intstr.FromString("not-found")} {
		tg := prepare(handler(corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: port}}), pod, c, ownScope(pod))
		if tg.err == nil {
			t.Errorf("port %s: prepared %+v, want an error", port.String(), tg.tcp)
		}
	}
}

// ownScope is the default host scope: the pod's own IPs only.
func ownScope(pod *node.Pod) probespec.HostScope { return probespec.HostScope{PodIPs: pod.IPs} }
