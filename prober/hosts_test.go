package prober_test

import (
	"net/netip"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/probelet/probelet/node"
	"github.com/probelet/probelet/prober"
	"github.com/probelet/probelet/probespec"
)

// hostTCPProbe is a TCP readiness probe naming host.
func hostTCPProbe(host string) *corev1.Probe {
	return tcpProbe(readyPort, func(p *corev1.Probe) { p.TCPSocket.Host = host })
}

// TestProbeHostPolicy: a probe naming a host its pod may not reach is a
// spec error (status, PodSpec, a Warning event) and is never dialed; the
// exceptions let it run.
func TestProbeHostPolicy(t *testing.T) {
	granted := &node.APIPod{NamespaceKnown: true, ProbeHostAllowed: true}
	refused := &node.APIPod{NamespaceKnown: true}
	cases := []struct {
		name     string
		host     string
		opts     []prober.Option
		mutate   func(*node.Pod)
		wantErr  string // "" when the probe runs
		wantDial string
	}{
		{"own IP runs", "10.0.0.5", nil, nil, "", "10.0.0.5"},
		{"own IP, another spelling, dials the judged form", "::ffff:10.0.0.5", nil, nil, "", "10.0.0.5"},
		{"node loopback refused", "127.0.0.1", nil, nil, "readinessProbe.tcpSocket.host", ""},
		{"hostname refused", "localhost", nil, nil, "a hostname is never one", ""},
		{"metadata endpoint refused", "169.254.169.254", nil, nil, "readinessProbe.tcpSocket.host", ""},
		{"CIDR allows", "192.168.7.7", []prober.Option{prober.WithProbeHostCIDRs(netip.MustParsePrefix("192.168.0.0/16"))}, nil, "", "192.168.7.7"},
		{"CIDR does not allow names", "localhost", []prober.Option{prober.WithProbeHostCIDRs(netip.MustParsePrefix("0.0.0.0/0"))}, nil, "hostname", ""},
		{"hostNetwork from the runtime allows", "127.0.0.1", nil, func(p *node.Pod) { p.HostNetwork = true }, "", "127.0.0.1"},
		{"hostNetwork from the API allows", "localhost", nil, func(p *node.Pod) {
			p.API = &node.APIPod{Spec: &corev1.PodSpec{HostNetwork: true, Containers: []corev1.Container{{Name: "app"}}}}
		}, "", "localhost"},
		{"granted namespace allows", "127.0.0.1", []prober.Option{prober.WithNamespaceGrants()}, func(p *node.Pod) { p.API = granted }, "", "127.0.0.1"},
		{"namespace without the label refuses", "127.0.0.1", []prober.Option{prober.WithNamespaceGrants()}, func(p *node.Pod) { p.API = refused }, "probelet.io/allow-probe-host=true", ""},
		{"a grant counts only with an API server", "127.0.0.1", nil, func(p *node.Pod) { p.API = &node.APIPod{} }, "readinessProbe.tcpSocket.host", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, tc.opts...)
			pod := testPod("c1", probespec.ContainerProbes{Readiness: hostTCPProbe(tc.host)})
			if tc.mutate != nil {
				tc.mutate(&pod)
			}
			h.tcp.always(readyPort, success)
			h.update(pod)
			h.step(3 * time.Second)
			st, _ := h.m.Container("c1")
			dialed := h.tcp.seenTargets()
			if tc.wantErr == "" {
				if st.SpecError != "" || len(dialed) == 0 || dialed[0].Host != tc.wantDial {
					t.Fatalf("spec error %q, dialed %+v; want %s dialed", st.SpecError, dialed, tc.wantDial)
				}
				return
			}
			if !strings.Contains(st.SpecError, tc.wantErr) || len(st.Probes) != 0 || len(dialed) != 0 {
				t.Fatalf("spec error %q, probes %v, dialed %+v; want an error containing %q and nothing dialed",
					st.SpecError, st.Probes, dialed, tc.wantErr)
			}
			if parsed, _ := h.m.PodSpec("uid-1"); parsed.ErrorFor("app") != st.SpecError {
				t.Errorf("PodSpec's error %q, the container's %q", parsed.ErrorFor("app"), st.SpecError)
			}
			var rejected []prober.Event
			for _, ev := range h.drainEvents() {
				if ev.Reason == "ProbeSpecRejected" {
					rejected = append(rejected, ev)
				}
			}
			if len(rejected) != 1 || rejected[0].Type != "Warning" || rejected[0].ContainerName != "app" ||
				!strings.Contains(rejected[0].Message, `pod default/web: container "app": readinessProbe.tcpSocket.host`) {
				t.Errorf("ProbeSpecRejected events %+v, want one Warning naming pod, container, probe and field", rejected)
			}
		})
	}
}

// With an API server, a host only a namespace grant could allow waits
// (neither rejected nor dialed) until the grant is known, then follows it
// both ways.
func TestProbeHostWaitsForTheNamespaceGrant(t *testing.T) {
	h := newHarness(t, prober.WithNamespaceGrants())
	h.tcp.always(readyPort, success)
	pod := testPod("c1", probespec.ContainerProbes{Readiness: hostTCPProbe("127.0.0.1")})
	h.update(pod)
	h.step(3 * time.Second)
	if st, _ := h.m.Container("c1"); st.SpecError != "" || len(h.tcp.seenTargets()) != 0 {
		t.Fatalf("before the grant is known: spec error %q, dialed %+v; want neither", st.SpecError, h.tcp.seenTargets())
	}
	pod.API = &node.APIPod{NamespaceKnown: true, ProbeHostAllowed: true}
	h.update(pod)
	h.step(time.Second)
	if st, _ := h.m.Container("c1"); st.SpecError != "" || len(h.tcp.seenTargets()) == 0 {
		t.Fatalf("granted: spec error %q, dialed %+v; want the probe run", st.SpecError, h.tcp.seenTargets())
	}
	pod.API = &node.APIPod{NamespaceKnown: true}
	h.update(pod)
	n := len(h.tcp.seenTargets())
	h.step(3 * time.Second)
	if st, _ := h.m.Container("c1"); st.SpecError == "" || len(h.tcp.seenTargets()) != n {
		t.Fatalf("grant withdrawn: spec error %q, %d more dials; want an error and none", st.SpecError, len(h.tcp.seenTargets())-n)
	}
	if st, _ := h.m.Container("c1"); len(st.Probes) != 0 {
		t.Errorf("grant withdrawn: probes %v, want the worker gone", st.Probes)
	}
}
