package prober_test

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/probelet/probelet/node"
	"github.com/probelet/probelet/prober"
	"github.com/probelet/probelet/prober/probe"
	"github.com/probelet/probelet/prober/results"
	"github.com/probelet/probelet/probespec"
)

func TestContainerStatusReportsProbeState(t *testing.T) {
	h := newHarness(t, prober.WithHistory(2))
	h.tcp.then(readyPort, failure, success, success)
	cp := probespec.ContainerProbes{Readiness: tcpProbe(readyPort, withThresholds(2, 3))}
	h.update(testPod("c1", cp))
	h.step(20 * time.Second)
	st, ok := h.m.Container("c1")
	if !ok {
		t.Fatal("container c1 unknown")
	}
	if st.PodUID != "uid-1" || st.PodName != "web" || st.PodNamespace != "default" ||
		st.ContainerName != "app" || st.ContainerID != "c1" || st.State != node.StateRunning || !st.StartedAt.Equal(epoch) {
		t.Fatalf("identity = %+v", st)
	}
	if !st.Started || !st.Ready {
		t.Fatalf("Started/Ready = %v/%v, want true/true", st.Started, st.Ready)
	}
	if st.Spec.Readiness == nil || st.Spec.Readiness.SuccessThreshold != 2 {
		t.Fatalf("Spec = %+v", st.Spec)
	}
	ps := st.Probes[probespec.Readiness]
	want := prober.ProbeStatus{
		Type: probespec.Readiness, Result: results.Success, Consecutive: 2,
		SuccessThreshold: 2, FailureThreshold: 3, LastProbeTime: epoch.Add(20 * time.Second), Method: probe.MethodDial, Origin: "node",
	}
	got := ps
	got.History = nil
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("probe status = %+v\nwant %+v", got, want)
	}
	if len(ps.History) != 2 || !ps.History[0].Time.Equal(epoch.Add(10*time.Second)) || ps.History[1].Result != results.Success {
		t.Fatalf("history (cap 2, oldest first) = %+v", ps.History)
	}
}

func TestContainersListsProbedAndMisconfiguredContainersOnly(t *testing.T) {
	h := newHarness(t, prober.WithSpecParser(probespec.NewMemo(1<<20)))
	pod := testPod("c1", probespec.ContainerProbes{})
	pod.Annotations = map[string]string{probespec.AnnotationProbes: `{"app": {"readinessProbe": {"tcpSocket": {"port": 1002}}},
		"broken": {"livenessProbe": {"tcpSocket": {"port": 1001}, "periodSeconds": -1}}}`}
	pod.Containers = append(pod.Containers,
		node.Container{ID: "c2", Name: "sidecar", State: node.StateRunning, StartedAt: epoch},
		node.Container{ID: "c3", Name: "broken", State: node.StateRunning, StartedAt: epoch})
	h.update(pod)
	list := h.m.Containers()
	if len(list) != 2 || list[0].ContainerName != "app" || list[1].ContainerName != "broken" {
		t.Fatalf("Containers = %+v, want app and broken", list)
	}
	if !strings.Contains(list[1].SpecError, "livenessProbe.periodSeconds") || len(list[1].Probes) != 0 {
		t.Fatalf("broken = %+v, want its spec error and no probes", list[1])
	}
	if _, ok := h.m.Container("c2"); ok {
		t.Fatal("a container without probes or errors is listed")
	}
}

// The engine owns the probes annotation: it parses what the node cache
// hands it, per container, as the daemon, probelet validate and the API
// path do (spec.Check).
func TestAnnotationIsParsedPerContainer(t *testing.T) {
	tests := []struct {
		name       string
		annotation string
		wantProbes []string          // containers with probe workers
		wantErrs   map[string]string // container → substring of its spec error
	}{{
		name:       "valid",
		annotation: `{"web": {"readinessProbe": {"tcpSocket": {"port": 1002}}}}`,
		wantProbes: []string{"web"},
	}, {
		name:       "one bad container keeps the other",
		annotation: `{"web": {"readinessProbe": {"tcpSocket": {"port": 1002}}}, "side": {"livenessProbe": {"tcpSocket": {"port": 1}, "successThreshold": 2}}}`,
		wantProbes: []string{"web"},
		wantErrs:   map[string]string{"side": "successThreshold"},
	}, {
		name:       "an unreadable annotation reaches every container",
		annotation: `{not json`,
		wantErrs:   map[string]string{"web": "annotation probelet.io/probes", "side": "annotation probelet.io/probes"},
	}, {
		name:       "no annotation",
		annotation: "",
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, prober.WithSpecParser(probespec.NewMemo(1<<20)))
			pod := testPod("c1", probespec.ContainerProbes{})
			pod.Annotations = map[string]string{probespec.AnnotationProbes: tc.annotation}
			pod.Containers = []node.Container{
				{ID: "c1", Name: "side", State: node.StateRunning, StartedAt: epoch},
				{ID: "c2", Name: "web", State: node.StateRunning, StartedAt: epoch},
			}
			h.update(pod)
			var probed []string
			errs := map[string]string{}
			for _, st := range h.m.Containers() {
				if len(st.Probes) > 0 {
					probed = append(probed, st.ContainerName)
				}
				if st.SpecError != "" {
					errs[st.ContainerName] = st.SpecError
				}
			}
			if !slices.Equal(probed, tc.wantProbes) {
				t.Errorf("probed containers = %v, want %v", probed, tc.wantProbes)
			}
			if len(errs) != len(tc.wantErrs) {
				t.Fatalf("spec errors = %v, want keys of %v", errs, tc.wantErrs)
			}
			for name, sub := range tc.wantErrs {
				if !strings.Contains(errs[name], sub) {
					t.Errorf("error for %s = %q, want one containing %q", name, errs[name], sub)
				}
			}
		})
	}
}

func TestContainersAreOrderedByNamespacePodAndContainerName(t *testing.T) {
	h := newHarness(t)
	// '-' sorts before '/', so joining the names into one string would
	// put web-1 before web and team-a before team.
	for i, p := range []struct{ ns, name string }{
		{"team-a", "api"}, {"team", "web-1"}, {"team", "web"}, {"default", "web"},
	} {
		pod := testPod(fmt.Sprintf("c%d", i), probespec.ContainerProbes{Readiness: tcpProbe(readyPort)})
		pod.UID, pod.Namespace, pod.Name = fmt.Sprintf("uid-%d", i), p.ns, p.name
		h.update(pod)
	}
	var got []string
	for _, st := range h.m.Containers() {
		got = append(got, st.PodNamespace+" "+st.PodName)
	}
	want := []string{"default web", "team web", "team web-1", "team-a api"}
	if !slices.Equal(got, want) {
		t.Fatalf("Containers order = %q, want %q", got, want)
	}
}

func TestSyncPodsRemovesUnlistedPodsAndKeepsResults(t *testing.T) {
	h := newHarness(t)
	a := testPod("a1", probespec.ContainerProbes{Readiness: tcpProbe(readyPort)})
	b := testPod("b1", probespec.ContainerProbes{Readiness: tcpProbe(readyPort)})
	b.UID, b.Name = "uid-2", "other"
	h.update(a)
	h.update(b)
	h.wantResult("a1", probespec.Readiness, results.Success)
	h.drainChanges()
	h.m.SyncPods([]node.Pod{a})
	h.settle()
	if _, ok := h.m.Container("b1"); ok {
		t.Fatal("unlisted pod survived SyncPods")
	}
	h.wantResult("a1", probespec.Readiness, results.Success)
	if ch := h.drainChanges(); len(ch) != 0 {
		t.Fatalf("SyncPods re-seeded a surviving container: %+v", ch)
	}
}

func TestProbeTotalCountsRunsByResult(t *testing.T) {
	h := newHarness(t)
	h.tcp.then(readyPort, success, failure, warning)
	h.update(testPod("c1", probespec.ContainerProbes{Readiness: tcpProbe(readyPort)}))
	h.step(20 * time.Second)
	if got := h.counter(probespec.Readiness, "successful", "app"); got != 2 {
		t.Errorf("successful = %v, want 2 (a warning counts as success)", got)
	}
	if got := h.counter(probespec.Readiness, "failed", "app"); got != 1 {
		t.Errorf("failed = %v, want 1", got)
	}
	if n := h.series("prober_probe_duration_seconds"); n != 1 {
		t.Errorf("duration series = %d, want 1", n)
	}
	wantLabels := map[string]map[string]string{
		"prober_probe_total": {"probe_type": "Readiness", "result": "failed", "container": "app",
			"pod": "web", "namespace": "default", "pod_uid": "uid-1"},
		"prober_probe_duration_seconds": {"probe_type": "Readiness", "container": "app", "pod": "web", "namespace": "default"},
	}
	for name, want := range wantLabels {
		found := false
		for _, got := range h.labels(name) {
			found = found || reflect.DeepEqual(got, want)
		}
		if !found {
			t.Errorf("%s has no series labelled %v: %v", name, want, h.labels(name))
		}
	}
}

func TestOptionsRejectBadValues(t *testing.T) {
	cases := map[string]prober.Option{
		"nil clock":       prober.WithClock(nil),
		"nil logger":      prober.WithLogger(nil),
		"nil registerer":  prober.WithRegisterer(nil),
		"nil tcp prober":  prober.WithTCPProber(nil),
		"nil exec runner": prober.WithExecRunner(nil),
		"nil killer":      prober.WithKiller(nil),
		"nil jitter":      prober.WithJitter(nil),
		"concurrency 0":   prober.WithConcurrency(0),
		"history -1":      prober.WithHistory(-1),
		"unknown action":  prober.WithLivenessAction(prober.LivenessAction(7)),
		"zero start time": prober.WithAgentStartTime(time.Time{}),
	}
	for name, opt := range cases {
		t.Run(name, func(t *testing.T) {
			if _, err := prober.NewManager(opt); err == nil {
				t.Fatal("NewManager accepted it")
			}
		})
	}
}

func TestMetricsRegisterOnceOnARegisterer(t *testing.T) {
	h := newHarness(t)
	if _, err := prober.NewManager(prober.WithRegisterer(h.reg)); err == nil {
		t.Fatal("a second manager on the same registerer must fail, not panic")
	}
}
