package prober_test

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/probelet/probelet/node"
	"github.com/probelet/probelet/prober"
	"github.com/probelet/probelet/probespec"
)

// The engine is the one owner of a pod's probes: the sandbox's annotation
// (what the pod was created with), parsed once, checked once against the
// API spec with `probelet validate`'s policy; a later change of the API
// object's annotation changes nothing and is reported once.
func TestPodSpecIsWhatThePodWasCreatedWith(t *testing.T) {
	const (
		readyHTTP  = `{"app": {"readinessProbe": {"tcpSocket": {"port": "http"}}}}`
		ready1002  = `{"app": {"readinessProbe": {"tcpSocket": {"port": 1002}}}}`
		liveness   = `{"app": {"livenessProbe": {"tcpSocket": {"port": 1002}}}}`
		changedMsg = "probelet.io/probes changed after the pod was created; the probes it was created with stay in force — recreate the pod to apply"
	)
	ports := func(ps ...corev1.ContainerPort) *corev1.PodSpec {
		return &corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Ports: ps}}}
	}
	api := func(ps *corev1.PodSpec, annotation string) *node.APIPod {
		return &node.APIPod{Spec: ps, Annotations: map[string]string{probespec.AnnotationProbes: annotation}}
	}
	// step is one snapshot the node cache hands the engine.
	type step struct {
		sandbox map[string]string // nil: a snapshot without the sandbox's annotations
		api     *node.APIPod
	}
	anno := func(v string) map[string]string { return map[string]string{probespec.AnnotationProbes: v} }
	tests := []struct {
		name        string
		steps       []step
		wantValue   string
		wantProbe   probespec.Type // -1: no worker
		wantError   string         // the container's spec error ("" none)
		wantChanged int            // ProbeSpecChanged events
	}{{
		name:      "the sandbox's annotation",
		steps:     []step{{sandbox: anno(ready1002)}},
		wantValue: ready1002, wantProbe: probespec.Readiness,
	}, {
		name:      "fixed once the sandbox's annotations were seen",
		steps:     []step{{sandbox: anno(ready1002)}, {sandbox: anno(liveness)}},
		wantValue: ready1002, wantProbe: probespec.Readiness,
	}, {
		name:      "a snapshot without the sandbox's annotations fixes nothing",
		steps:     []step{{}, {sandbox: anno(liveness)}},
		wantValue: liveness, wantProbe: probespec.Liveness,
	}, {
		name:      "a named port the API spec resolves",
		steps:     []step{{sandbox: anno(readyHTTP), api: api(ports(corev1.ContainerPort{Name: "http", ContainerPort: 1002}), readyHTTP)}},
		wantValue: readyHTTP, wantProbe: probespec.Readiness,
	}, {
		name:      "a named port the API spec does not resolve is a spec error",
		steps:     []step{{sandbox: anno(readyHTTP)}, {sandbox: anno(readyHTTP), api: api(ports(), readyHTTP)}},
		wantValue: readyHTTP, wantProbe: -1,
		wantError: probespec.Check(probespec.PodRef{}, readyHTTP, ports()).Errors.ByContainer()["app"],
	}, {
		name:      "a probed container the API spec does not have",
		steps:     []step{{sandbox: anno(ready1002), api: api(&corev1.PodSpec{Containers: []corev1.Container{{Name: "other"}}}, ready1002)}},
		wantValue: ready1002, wantProbe: -1, wantError: `spec.containers: Not found: "app"`,
	}, {
		name: "a changed API annotation changes nothing and is reported once",
		steps: []step{
			{sandbox: anno(ready1002), api: api(ports(), ready1002)},
			{sandbox: anno(ready1002), api: api(ports(), "{}")},
			{sandbox: anno(ready1002), api: api(ports(), "{}")},
			{sandbox: anno(ready1002), api: api(ports(), liveness)},
		},
		wantValue: ready1002, wantProbe: probespec.Readiness, wantChanged: 1,
	}, {
		name:      "an API annotation set on a pod created without one",
		steps:     []step{{sandbox: map[string]string{"other": "x"}, api: api(ports(), ready1002)}},
		wantValue: "", wantProbe: -1, wantChanged: 1,
	}, {
		name:      "an API source that does not give annotations",
		steps:     []step{{sandbox: anno(ready1002), api: &node.APIPod{Spec: ports()}}},
		wantValue: ready1002, wantProbe: probespec.Readiness,
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, prober.WithSpecParser(probespec.NewMemo(1<<20)))
			for _, s := range tc.steps {
				pod := testPod("c1", probespec.ContainerProbes{})
				pod.Annotations, pod.API = s.sandbox, s.api
				h.update(pod)
			}
			parsed, ok := h.m.PodSpec("uid-1")
			if !ok || parsed.Value != tc.wantValue {
				t.Fatalf("PodSpec = %+v, %v; want the value %s", parsed, ok, tc.wantValue)
			}
			st, _ := h.m.Container("c1")
			var probed []probespec.Type
			for _, pt := range probespec.Types {
				if _, ok := st.Probes[pt]; ok {
					probed = append(probed, pt)
				}
			}
			if want := []probespec.Type{tc.wantProbe}; tc.wantProbe < 0 && len(probed) != 0 ||
				tc.wantProbe >= 0 && (len(probed) != 1 || probed[0] != want[0]) {
				t.Errorf("workers %v, want %v", probed, tc.wantProbe)
			}
			if tc.wantError == "" && st.SpecError != "" || !strings.Contains(st.SpecError, tc.wantError) {
				t.Errorf("spec error %q, want %q", st.SpecError, tc.wantError)
			}
			if parsed.ErrorFor("app") != st.SpecError {
				t.Errorf("PodSpec's error %q, the container's %q: two answers", parsed.ErrorFor("app"), st.SpecError)
			}
			var changed []prober.Event
			for _, ev := range h.drainEvents() {
				if ev.Reason == "ProbeSpecChanged" {
					changed = append(changed, ev)
				}
			}
			if len(changed) != tc.wantChanged {
				t.Fatalf("ProbeSpecChanged events %+v, want %d", changed, tc.wantChanged)
			}
			for _, ev := range changed {
				if ev.Type != "Warning" || ev.Message != changedMsg || ev.PodUID != "uid-1" || ev.ContainerName != "" {
					t.Errorf("event %+v, want a Warning about the pod: %s", ev, changedMsg)
				}
			}
		})
	}
}

func TestPodSpecOfAnUnknownPod(t *testing.T) {
	h := newHarness(t)
	if p, ok := h.m.PodSpec("nobody"); ok {
		t.Fatalf("PodSpec of an unknown pod = %+v", p)
	}
	h.update(testPod("c1", probespec.ContainerProbes{Readiness: tcpProbe(readyPort)}))
	h.m.RemovePod("uid-1")
	if p, ok := h.m.PodSpec("uid-1"); ok {
		t.Fatalf("PodSpec of a removed pod = %+v", p)
	}
}
