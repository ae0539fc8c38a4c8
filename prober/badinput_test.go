package prober_test

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/probelet/probelet/node"
	"github.com/probelet/probelet/prober/results"
	"github.com/probelet/probelet/probespec"
)

// TestBadInputIsAnErroredProbeNeverAPanic feeds the engine specs that
// skipped validation: each run errors with a message naming what is wrong,
// is discarded (the seed stays, nothing is killed) and is retried on a
// sane period.
func TestBadInputIsAnErroredProbeNeverAPanic(t *testing.T) {
	tcpPort := func(p intstr.IntOrString) *corev1.Probe {
		return &corev1.Probe{ProbeHandler: corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: p}}}
	}
	cases := []struct {
		name  string
		probe *corev1.Probe // numbers left at zero: the engine defaults them
		ports string        // the container's io.kubernetes.container.ports
		want  string
	}{
		{"no handler", &corev1.Probe{}, "", "missing probe handler for default/web:app"},
		{"port above 65535", tcpPort(intstr.FromInt32(70000)), "", `container "app": invalid port number 70000`},
		{"negative port", tcpPort(intstr.FromInt32(-1)), "", `container "app": invalid port number -1`},
		{"named port resolving out of range", tcpPort(intstr.FromString("big")), `[{"name":"big","containerPort":99999}]`, "invalid port number 99999"},
		{"malformed ports annotation", tcpPort(intstr.FromString("http")), `{not json`, "is malformed"},
		{"exec without a runner", &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"true"}}}}, "", "exec probe: no runner"},
		{"exec with no command", &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{}}}, "", "no runner"},
		{"http port 0", &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Port: intstr.FromInt32(0)}}}, "", "invalid port number 0"},
		{"grpc port out of range", &corev1.Probe{ProbeHandler: corev1.ProbeHandler{GRPC: &corev1.GRPCAction{Port: 65536}}}, "", "port 65536 out of range"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			pod := testPod("c1", probespec.ContainerProbes{Liveness: tc.probe})
			pod.Containers[0].Annotations = map[string]string{probespec.AnnotationContainerPorts: tc.ports}
			h.update(pod)
			h.step(20 * time.Second)
			ev := h.drainEvents()
			if len(ev) != 3 {
				t.Fatalf("events = %+v, want 3 (runs at 0, 10 and 20 s)", ev)
			}
			prefix := "Liveness probe errored and resulted in unknown state: "
			if !strings.HasPrefix(ev[0].Message, prefix) || !strings.Contains(ev[0].Message, tc.want) {
				t.Fatalf("event %q, want %q with %q", ev[0].Message, prefix, tc.want)
			}
			h.wantResult("c1", probespec.Liveness, results.Success)
			if k := h.killer.calls(); len(k) != 0 {
				t.Fatalf("errored runs killed the container: %+v", k)
			}
		})
	}
}

// TestMalformedPodsAreIgnoredWithoutPanic: probes for containers that do
// not exist, nil probes, containers without an ID, and empty pods.
func TestMalformedPodsAreIgnoredWithoutPanic(t *testing.T) {
	h := newHarness(t)
	pods := []node.Pod{
		{},
		{UID: "u1", Annotations: annotate(probespec.PodProbes{"ghost": {Liveness: tcpProbe(livePort)}})},
		{UID: "u2", Annotations: annotate(probespec.PodProbes{"app": {}}), Containers: []node.Container{{ID: "a", Name: "app", State: node.StateRunning}}},
		{UID: "u3", Annotations: annotate(probespec.PodProbes{"app": {Liveness: tcpProbe(livePort)}}), Containers: []node.Container{{Name: "app", State: node.StateRunning}}},
		{UID: "u4", Annotations: annotate(probespec.PodProbes{"": {Liveness: tcpProbe(livePort)}}), Containers: []node.Container{{ID: "b", State: node.StateRunning}}},
	}
	for _, p := range pods {
		h.update(p)
	}
	h.step(20 * time.Second)
	// u3 (no ID yet) waits with an Unknown result; u4's nameless
	// container runs in a pod without an IP, so it is probed on the node's
	// own address (":port"), as the kubelet would. Neither panics.
	for _, c := range h.m.Containers() {
		if c.PodUID != "u3" && c.PodUID != "u4" {
			t.Errorf("unexpected status %+v", c)
		}
	}
	for _, tg := range h.tcp.seenTargets() {
		if tg.Host != "" || tg.InPod {
			t.Fatalf("probed %+v; only u4 is probeable, on the node's own address", tg)
		}
	}
	h.m.SyncPods(nil)
	h.settle()
	if got := h.m.Containers(); len(got) != 0 {
		t.Fatalf("containers after SyncPods(nil): %+v", got)
	}
}
