package prober_test

import (
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	"github.com/probelet/probelet/node"
	"github.com/probelet/probelet/prober"
	"github.com/probelet/probelet/prober/probe"
	"github.com/probelet/probelet/prober/results"
	"github.com/probelet/probelet/prober/spec"
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
			pod := withAPI(testPod("c1", spec.ContainerProbes{Readiness: tcpProbe(readyPort)}), ps, false, nil)
			h.update(pod)
			h.wantResult("c1", probe.Readiness, results.Success)
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
	pod := withAPI(testPod("c1", spec.ContainerProbes{Liveness: p}),
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
	pod := testPod("c1", spec.ContainerProbes{Liveness: tcpProbe(livePort), Readiness: tcpProbe(readyPort)})
	h.update(pod)
	h.update(withAPI(pod, &corev1.PodSpec{Containers: []corev1.Container{{Name: "app"}}}, true, ptr.To[int64](30)))
	st, _ := h.m.Container("c1")
	if _, ok := st.Probes[probe.Liveness]; ok {
		t.Fatalf("liveness worker kept during deletion: %+v", st.Probes)
	}
	if _, ok := st.Probes[probe.Readiness]; !ok {
		t.Fatalf("readiness stopped during deletion: %+v", st.Probes)
	}
}

// With the pod spec, $(VAR) in an exec command expands like the kubelet's
// ExpandContainerCommandOnlyStatic: the spec's static env values only.
func TestExecExpandsFromTheSpecsStaticEnv(t *testing.T) {
	runner := &fakeRunner{}
	h := newHarness(t, prober.WithExecRunner(runner))
	exec := &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{
		Command: []string{"check", "$(STATIC)", "$(FROM_SECRET)", "$(RUNTIME_ONLY)"}}}}
	pod := testPod("c1", spec.ContainerProbes{Readiness: exec})
	pod.Containers[0].Env = []string{"STATIC=runtime", "FROM_SECRET=s3cret", "RUNTIME_ONLY=img"}
	ps := &corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Env: []corev1.EnvVar{
		{Name: "STATIC", Value: "spec"},
		{Name: "FROM_SECRET", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{Key: "k"}}},
	}}}}
	h.update(withAPI(pod, ps, false, nil))
	want := "c1: check spec  $(RUNTIME_ONLY)"
	runner.mu.Lock()
	defer runner.mu.Unlock()
	if !slices.Contains(runner.cmds, want) {
		t.Fatalf("exec commands = %q, want %q", runner.cmds, want)
	}
}
