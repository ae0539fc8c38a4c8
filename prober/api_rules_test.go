package prober_test

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	"github.com/probelet/probelet/node"
	"github.com/probelet/probelet/prober"
	"github.com/probelet/probelet/prober/results"
	"github.com/probelet/probelet/probespec"
)

// The rules the pod spec from the API server settles.

// withAPI returns pod with the API server's spec and deletion state.
func withAPI(pod node.Pod, ps *corev1.PodSpec, deleting bool, deletionGrace *int64) node.Pod {
	pod.API = &node.APIPod{Spec: ps, DeletionGracePeriodSeconds: deletionGrace}
	if deleting {
		pod.API.DeletionTimestamp = epoch
		pod.Deleting = true
	}
	return pod
}

func exitedWith(pod node.Pod, code int32) node.Pod {
	pod = withState(pod, node.StateExited)
	pod.Containers[0].ExitCode = code
	return pod
}

// A terminated container that will not be restarted ends its workers, as
// the kubelet's do; one that will be restarted keeps them.
func TestExitedContainerThatWillNotRestartStopsItsWorkers(t *testing.T) {
	tests := []struct {
		name       string
		policy     corev1.RestartPolicy
		exitCode   int32
		wantWorker bool
	}{
		{"Never", corev1.RestartPolicyNever, 0, false},
		{"OnFailure, exit 0", corev1.RestartPolicyOnFailure, 0, false},
		{"OnFailure, exit 1", corev1.RestartPolicyOnFailure, 1, true},
		{"Always", corev1.RestartPolicyAlways, 0, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			ps := &corev1.PodSpec{RestartPolicy: tc.policy, Containers: []corev1.Container{{Name: "app"}}}
			pod := withAPI(testPod("c1", probespec.ContainerProbes{Readiness: tcpProbe(readyPort)}), ps, false, nil)
			h.update(pod)
			h.wantResult("c1", probespec.Readiness, results.Success)
			h.update(exitedWith(pod, tc.exitCode))
			st, listed := h.m.Container("c1")
			if got := listed && len(st.Probes) > 0; got != tc.wantWorker {
				t.Fatalf("worker kept = %v, want %v (%+v)", got, tc.wantWorker, st)
			}
			var last results.Result
			for _, c := range h.drainChanges() {
				last = c.Result
			}
			if last != results.Failure {
				t.Fatalf("last published readiness = %v, want Failure", last)
			}
			// A later update of the pod must not bring a stopped worker back.
			h.update(exitedWith(pod, tc.exitCode))
			if ch := h.drainChanges(); len(ch) != 0 {
				t.Fatalf("changes after a later update: %+v", ch)
			}
		})
	}
}

// The kubelet's setTerminationGracePeriod: a requested deletion's grace
// wins over the probe's and the pod's. (Liveness stops at deletion, so
// only a startup or liveness kill racing the deletion request sees it.)
func TestDeletionGraceWinsForAKill(t *testing.T) {
	h := newHarness(t)
	p := failingLiveness(h, func(p *corev1.Probe) { p.TerminationGracePeriodSeconds = ptr.To[int64](5) })
	pod := withAPI(testPod("c1", probespec.ContainerProbes{Liveness: p}),
		&corev1.PodSpec{TerminationGracePeriodSeconds: ptr.To[int64](60), Containers: []corev1.Container{{Name: "app"}}}, false, ptr.To[int64](9))
	h.update(pod)
	if k := h.killer.calls(); len(k) != 1 || k[0].grace != 9*time.Second {
		t.Fatalf("kills = %+v, want one with the deletion's 9 s", k)
	}
}

// A deletion requested in the API server stops liveness and startup at
// once, as the kubelet's StopLivenessAndStartup does; readiness goes on.
func TestAPIDeletionStopsLivenessAndStartup(t *testing.T) {
	h := newHarness(t)
	pod := testPod("c1", probespec.ContainerProbes{Liveness: tcpProbe(livePort), Readiness: tcpProbe(readyPort)})
	h.update(pod)
	h.update(withAPI(pod, &corev1.PodSpec{Containers: []corev1.Container{{Name: "app"}}}, true, ptr.To[int64](30)))
	st, _ := h.m.Container("c1")
	if _, ok := st.Probes[probespec.Liveness]; ok {
		t.Fatalf("liveness worker kept during deletion: %+v", st.Probes)
	}
	if _, ok := st.Probes[probespec.Readiness]; !ok {
		t.Fatalf("readiness stopped during deletion: %+v", st.Probes)
	}
}

// $(VAR) in an exec command expands like the kubelet's
// ExpandContainerCommandOnlyStatic: from the spec's static env values only
// (a secretKeyRef variable is ""). Without the spec (node-only, or before
// the informer has the pod) the command runs as written, and once the
// spec arrives the next run expands from it; the runtime's environment,
// which holds resolved secret values, is never a source.
func TestExecExpandsFromTheSpecsStaticEnvOnly(t *testing.T) {
	runner := &fakeRunner{}
	h := newHarness(t, prober.WithExecRunner(runner))
	exec := &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{
		Command: []string{"check", "$(STATIC)", "$(FROM_SECRET)", "$(RUNTIME_ONLY)"}}}, PeriodSeconds: 10}
	pod := testPod("c1", probespec.ContainerProbes{Readiness: exec})
	ps := &corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Env: []corev1.EnvVar{
		{Name: "STATIC", Value: "spec"},
		{Name: "FROM_SECRET", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{Key: "k"}}},
	}}}}
	lastCmd := func() string {
		runner.mu.Lock()
		defer runner.mu.Unlock()
		if len(runner.cmds) == 0 {
			return ""
		}
		return runner.cmds[len(runner.cmds)-1]
	}
	steps := []struct {
		name string
		pod  node.Pod
		want string
	}{
		{"node-only: as written", pod, "c1: check $(STATIC) $(FROM_SECRET) $(RUNTIME_ONLY)"},
		{"the spec arrived: its static values", withAPI(pod, ps, false, nil), "c1: check spec  $(RUNTIME_ONLY)"},
		{"the spec is gone again: as written", pod, "c1: check $(STATIC) $(FROM_SECRET) $(RUNTIME_ONLY)"},
	}
	for i, s := range steps {
		h.update(s.pod)
		if i > 0 {
			h.step(10 * time.Second)
		}
		if got := lastCmd(); got != s.want {
			t.Fatalf("%s: exec command = %q, want %q", s.name, got, s.want)
		}
	}
}

// The kubelet's TestDoProbeWithContainerRestartAllContainers: a container
// of a restartPolicy Never pod that exits keeps its liveness, readiness and
// startup workers when it exited on its own RestartAllContainers rule, when
// another container of the pod exited on one, or while the pod carries the
// AllContainersRestarting condition: the kubelet restarts every container
// then (ShouldAllContainersRestart), so its workers go on.
func TestContainerRestartAllContainersKeepsWorkers(t *testing.T) {
	never := ptr.To(corev1.ContainerRestartPolicyNever)
	restartAllOn1 := []corev1.ContainerRestartRule{{
		Action:    corev1.ContainerRestartRuleActionRestartAllContainers,
		ExitCodes: &corev1.ContainerRestartRuleOnExitCodes{Operator: corev1.ContainerRestartRuleOnExitCodesOpIn, Values: []int32{1}},
	}}
	trigger := node.Container{ID: "t1", Name: "trigger", State: node.StateExited, ExitCode: 1}
	tests := []struct {
		name       string
		app        corev1.Container
		others     []corev1.Container
		initOthers []corev1.Container
		runtime    []node.Container // the pod's other containers, as the runtime reports them
		restarting bool             // the AllContainersRestarting condition
		wantWorker bool
	}{
		{name: "container terminated with matching restartAllContainers",
			app: corev1.Container{Name: "app", RestartPolicy: never, RestartPolicyRules: restartAllOn1}, wantWorker: true},
		{name: "container terminated, restartAllContainers does not match",
			app: corev1.Container{Name: "app", RestartPolicy: never, RestartPolicyRules: []corev1.ContainerRestartRule{{
				Action:    corev1.ContainerRestartRuleActionRestartAllContainers,
				ExitCodes: &corev1.ContainerRestartRuleOnExitCodes{Operator: corev1.ContainerRestartRuleOnExitCodesOpIn, Values: []int32{2}},
			}}}, wantWorker: false},
		{name: "container terminated by restartAllContainers",
			app:     corev1.Container{Name: "app"},
			others:  []corev1.Container{{Name: "trigger", RestartPolicy: never, RestartPolicyRules: restartAllOn1}},
			runtime: []node.Container{trigger}, wantWorker: true},
		{name: "container terminated by an init container's restartAllContainers",
			app:        corev1.Container{Name: "app"},
			initOthers: []corev1.Container{{Name: "trigger", RestartPolicy: ptr.To(corev1.ContainerRestartPolicyAlways), RestartPolicyRules: restartAllOn1}},
			runtime:    []node.Container{trigger}, wantWorker: true},
		{name: "trigger still running",
			app:     corev1.Container{Name: "app"},
			others:  []corev1.Container{{Name: "trigger", RestartPolicy: never, RestartPolicyRules: restartAllOn1}},
			runtime: []node.Container{{ID: "t1", Name: "trigger", State: node.StateRunning}}, wantWorker: false},
		{name: "AllContainersRestarting condition",
			app: corev1.Container{Name: "app"}, restarting: true, wantWorker: true},
	}
	for _, typ := range probespec.Types {
		for _, tc := range tests {
			t.Run(typ.String()+"/"+tc.name, func(t *testing.T) {
				h := newHarness(t)
				// A run of failures below the threshold: no hold, so the
				// exit alone decides.
				h.tcp.always(livePort, failure)
				h.tcp.always(readyPort, failure)
				h.tcp.always(startPort, failure)
				var cp probespec.ContainerProbes
				switch typ {
				case probespec.Liveness:
					cp.Liveness = tcpProbe(livePort)
				case probespec.Readiness:
					cp.Readiness = tcpProbe(readyPort)
				case probespec.Startup:
					cp.Startup = tcpProbe(startPort)
				}
				ps := &corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever,
					InitContainers: tc.initOthers, Containers: append([]corev1.Container{tc.app}, tc.others...)}
				pod := withAPI(testPod("c1", cp), ps, false, nil)
				pod.API.AllContainersRestarting = tc.restarting
				h.update(pod)
				exited := exitedWith(pod, 1)
				exited.Containers = append(exited.Containers, tc.runtime...)
				h.update(exited)
				st, listed := h.m.Container("c1")
				if got := listed && len(st.Probes) > 0; got != tc.wantWorker {
					t.Fatalf("worker kept = %v, want %v (%+v)", got, tc.wantWorker, st)
				}
				if tc.wantWorker && st.Probes[typ].Result != results.Failure {
					t.Fatalf("%v result of the exited container = %v, want Failure", typ, st.Probes[typ].Result)
				}
			})
		}
	}
}

// The kubelet's TestAddRemovePodsWithRestartableInitContainer: with the
// pod spec, only a pod's containers and its sidecars (init containers with
// restartPolicy Always) get probe workers. A plain init container named in
// the annotation is never probed nor killed, even when the spec arrives
// after its workers started; its status names the API server's Forbidden
// errors.
func TestPlainInitContainerGetsNoProbeWorkers(t *testing.T) {
	always := ptr.To(corev1.ContainerRestartPolicyAlways)
	probes := probespec.ContainerProbes{Liveness: tcpProbe(livePort), Readiness: tcpProbe(readyPort), Startup: tcpProbe(startPort)}
	const forbidden = ": Forbidden: may not be set for init containers without restartPolicy=Always"
	tests := []struct {
		name        string
		init        corev1.Container
		specLater   bool
		wantWorkers int
	}{
		{name: "pod without sidecar", init: corev1.Container{Name: "app"}},
		{name: "spec arrives after the workers started", init: corev1.Container{Name: "app"}, specLater: true},
		{name: "pod with sidecar", init: corev1.Container{Name: "app", RestartPolicy: always}, wantWorkers: 3},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			h.tcp.always(livePort, failure)
			h.tcp.always(startPort, failure)
			ps := &corev1.PodSpec{InitContainers: []corev1.Container{{Name: "setup"}, tc.init}, Containers: []corev1.Container{{Name: "web"}}}
			pod := testPod("c1", probes)
			if tc.specLater {
				h.update(pod) // node-only: probelet cannot tell an init container
			}
			pod = withAPI(pod, ps, false, nil)
			h.update(pod)
			before := h.tcp.count(livePort) + h.tcp.count(readyPort) + h.tcp.count(startPort)
			h.step(time.Minute)
			st, listed := h.m.Container("c1")
			if !listed || len(st.Probes) != tc.wantWorkers {
				t.Fatalf("workers = %d (listed %v), want %d: %+v", len(st.Probes), listed, tc.wantWorkers, st)
			}
			if tc.wantWorkers > 0 {
				return
			}
			if after := h.tcp.count(livePort) + h.tcp.count(readyPort) + h.tcp.count(startPort); after != before {
				t.Fatalf("probes run after the spec arrived: %d, then %d", before, after)
			}
			if k := h.killer.calls(); len(k) != 0 {
				t.Fatalf("kills = %+v, want none", k)
			}
			want := "spec.initContainers[1].livenessProbe" + forbidden + "; spec.initContainers[1].readinessProbe" + forbidden +
				"; spec.initContainers[1].startupProbe" + forbidden
			if st.SpecError != want {
				t.Fatalf("SpecError = %q, want %q", st.SpecError, want)
			}
		})
	}
}

// The kubelet's TestUpdatePodStatusWithInitContainers: a plain init
// container is started while it runs and ready only once it exited 0.
func TestPlainInitContainerIsReadyOnlyOnceItExitsZero(t *testing.T) {
	ps := &corev1.PodSpec{InitContainers: []corev1.Container{{Name: "app"}}, Containers: []corev1.Container{{Name: "web"}}}
	pod := withAPI(testPod("c1", probespec.ContainerProbes{Readiness: tcpProbe(readyPort)}), ps, false, nil)
	tests := []struct {
		name                   string
		pod                    node.Pod
		wantStarted, wantReady bool
	}{
		{"running", pod, true, false},
		{"exited 0", exitedWith(pod, 0), false, true},
		{"exited 1", exitedWith(pod, 1), false, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			h.update(tc.pod)
			st, listed := h.m.Container("c1")
			if !listed || st.Started != tc.wantStarted || st.Ready != tc.wantReady {
				t.Fatalf("listed %v, started %v, ready %v; want started %v, ready %v", listed, st.Started, st.Ready, tc.wantStarted, tc.wantReady)
			}
		})
	}
}

// The kubelet's computePodActions words a probe kill by the restart it
// expects: a container that restarts "will be restarted"; one that will
// not keeps the bare message while another container runs, and otherwise
// the kubelet kills the whole pod — killContainer's "Stopping container",
// with the pod's grace, not the probe's; a sidecar is an "Init container".
func TestTheKillingMessageFollowsTheRestartPolicy(t *testing.T) {
	never := ptr.To(corev1.ContainerRestartPolicyNever)
	tests := []struct {
		name      string
		policy    corev1.RestartPolicy
		own       *corev1.ContainerRestartPolicy
		otherRuns bool
		sidecar   bool
		want      string
		wantGrace time.Duration
	}{
		{"Always restarts", corev1.RestartPolicyAlways, nil, false, false, "Container app failed liveness probe, will be restarted", 5 * time.Second},
		{"OnFailure restarts", corev1.RestartPolicyOnFailure, nil, false, false, "Container app failed liveness probe, will be restarted", 5 * time.Second},
		{"Never, another container runs", corev1.RestartPolicyNever, nil, true, false, "Container app failed liveness probe", 5 * time.Second},
		{"Never, alone: the pod is killed", corev1.RestartPolicyNever, nil, false, false, "Stopping container app", 60 * time.Second},
		{"the container's own Never wins", corev1.RestartPolicyAlways, never, false, false, "Stopping container app", 60 * time.Second},
		{"a sidecar", corev1.RestartPolicyAlways, nil, false, true, "Init container app failed liveness probe", 5 * time.Second},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			p := failingLiveness(h, func(p *corev1.Probe) { p.TerminationGracePeriodSeconds = ptr.To[int64](5) })
			pod := testPod("c1", probespec.ContainerProbes{Liveness: p})
			spec := &corev1.PodSpec{RestartPolicy: tc.policy, TerminationGracePeriodSeconds: ptr.To[int64](60),
				Containers: []corev1.Container{{Name: "app", RestartPolicy: tc.own}, {Name: "other"}}}
			if tc.sidecar {
				spec.InitContainers, spec.Containers = spec.Containers[:1], spec.Containers[1:]
				spec.InitContainers[0].RestartPolicy = ptr.To(corev1.ContainerRestartPolicyAlways)
			}
			other := node.Container{ID: "c2", Name: "other", State: node.StateExited}
			if tc.otherRuns {
				other.State = node.StateRunning
			}
			pod.Containers = append(pod.Containers, other)
			pod.TerminationGracePeriodSeconds = spec.TerminationGracePeriodSeconds
			h.update(withAPI(pod, spec, false, nil))
			kills := h.killer.calls()
			if len(kills) != 1 || kills[0].reason != tc.want || kills[0].grace != tc.wantGrace {
				t.Fatalf("kills %+v, want one %q with grace %v", kills, tc.want, tc.wantGrace)
			}
			for _, e := range h.drainEvents() {
				if e.InitContainer != tc.sidecar {
					t.Errorf("event %s: InitContainer=%v, want %v", e.Reason, e.InitContainer, tc.sidecar)
				}
			}
		})
	}
}
