package explain_test

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/probelet/probelet/node"
	"github.com/probelet/probelet/prober"
	"github.com/probelet/probelet/prober/explain"
	"github.com/probelet/probelet/prober/results"
	"github.com/probelet/probelet/probespec"
)

var t0 = time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)

func running(st *prober.ContainerStatus) explain.Subject {
	return explain.Subject{Namespace: "ns", Pod: "p", Container: node.Container{ID: "c1", Name: "c", State: node.StateRunning}, Status: st}
}

func runs(rs ...results.Result) []prober.ProbeRecord {
	var out []prober.ProbeRecord
	for i, r := range rs {
		out = append(out, prober.ProbeRecord{Time: t0.Add(time.Duration(i) * time.Second), Result: r, Output: "out"})
	}
	return out
}

func TestExplain(t *testing.T) {
	delayed := &corev1.Probe{InitialDelaySeconds: 15}
	tests := []struct {
		name     string
		e        explain.Subject
		subjects []string
		text     []string // substrings of the first explanation
	}{
		{
			name: "startup not run yet",
			e: running(&prober.ContainerStatus{Probes: map[probespec.Type]prober.ProbeStatus{
				probespec.Startup: {Result: results.Unknown, FailureThreshold: 30}}}),
			subjects: []string{explain.SubjectNotStarted},
			text:     []string{"startup probe has not run yet", "liveness and readiness wait"},
		},
		{
			name: "startup failing",
			e: running(&prober.ContainerStatus{Probes: map[probespec.Type]prober.ProbeStatus{
				probespec.Startup: {Result: results.Unknown, Consecutive: 4, FailureThreshold: 30, LastProbeTime: t0,
					LastOutput: "no file\n", History: runs(results.Failure, results.Failure, results.Failure, results.Failure)}}}),
			subjects: []string{explain.SubjectNotStarted},
			text:     []string{"failed 4 of 30", "at 30 the container is restarted", "last output: no file"},
		},
		{
			name: "readiness waiting for its initial delay",
			e: running(&prober.ContainerStatus{Started: true, Spec: specWith(probespec.Readiness, delayed),
				Probes: map[probespec.Type]prober.ProbeStatus{probespec.Readiness: {Result: results.Failure, FailureThreshold: 3, SuccessThreshold: 1}}}),
			subjects: []string{explain.SubjectNotReady},
			text:     []string{"has not run yet (initialDelaySeconds 15)"},
		},
		{
			name: "readiness succeeding below its success threshold",
			e: running(&prober.ContainerStatus{Started: true, Probes: map[probespec.Type]prober.ProbeStatus{
				probespec.Readiness: {Result: results.Failure, Consecutive: 1, SuccessThreshold: 3, FailureThreshold: 3,
					LastProbeTime: t0, History: runs(results.Failure, results.Success)}}}),
			subjects: []string{explain.SubjectNotReady},
			text:     []string{"succeeded 1 of the 3 times in a row it needs"},
		},
		{
			name: "an errored run does not decide the run's kind",
			e: running(&prober.ContainerStatus{Started: true, Probes: map[probespec.Type]prober.ProbeStatus{
				probespec.Readiness: {Result: results.Failure, Consecutive: 1, SuccessThreshold: 2, FailureThreshold: 3, LastProbeTime: t0,
					History: append(runs(results.Success), prober.ProbeRecord{Result: results.Unknown, Error: "boom"})}}}),
			subjects: []string{explain.SubjectNotReady},
			text:     []string{"succeeded 1 of the 2"},
		},
		{
			name: "readiness failing below its failure threshold",
			e: running(&prober.ContainerStatus{Started: true, Probes: map[probespec.Type]prober.ProbeStatus{
				probespec.Readiness: {Result: results.Failure, Consecutive: 1, SuccessThreshold: 1, FailureThreshold: 3,
					LastProbeTime: t0, History: runs(results.Failure)}}}),
			subjects: []string{explain.SubjectNotReady},
			text:     []string{"last 1 run(s) failed", "starting value"},
		},
		{
			name: "liveness failing below threshold, still ready",
			e: running(&prober.ContainerStatus{Started: true, Ready: true, Probes: map[probespec.Type]prober.ProbeStatus{
				probespec.Liveness: {Result: results.Success, Consecutive: 2, FailureThreshold: 3, LastProbeTime: t0,
					LastOutput: "connection refused", History: runs(results.Failure, results.Failure)}}}),
			subjects: []string{explain.SubjectLivenessFailing},
			text:     []string{"failed 2 of 3", "connection refused"},
		},
		{
			name: "liveness failed and on hold",
			e: running(&prober.ContainerStatus{Started: true, Ready: true, Probes: map[probespec.Type]prober.ProbeStatus{
				probespec.Liveness: {Result: results.Failure, OnHold: true, FailureThreshold: 3, LastProbeTime: t0, History: runs(results.Failure)}},
				Restarts: []prober.Restart{{Time: t0, ContainerID: "c1", ProbeType: probespec.Liveness, GracePeriod: 2 * time.Second,
					Message: "Container c failed liveness probe, will be restarted", Err: "rpc error: deadline exceeded"}}}),
			subjects: []string{explain.SubjectLivenessFailing, explain.SubjectRestarted},
			text:     []string{"failed 3 times in a row", "being stopped"},
		},
		{
			name: "liveness kill deferred by the kill guard",
			e: running(&prober.ContainerStatus{Started: true, Ready: true, Probes: map[probespec.Type]prober.ProbeStatus{
				probespec.Liveness: {Result: results.Failure, Consecutive: 5, FailureThreshold: 3, LastProbeTime: t0,
					LastOutput: "connection refused", History: runs(results.Failure, results.Failure),
					KillDeferred:      "node in FullDisruption, 18 of 20 liveness probes failing since 10:02:11",
					KillDeferredSince: t0}}}),
			subjects: []string{explain.SubjectKillDeferred},
			text: []string{"node in FullDisruption, 18 of 20 liveness probes failing since 10:02:11;", "failed 3 times in a row",
				"not at all if the probe succeeds first", "waiting since 12:00:00", "connection refused"},
		},
		{
			name: "startup kill deferred",
			e: running(&prober.ContainerStatus{Probes: map[probespec.Type]prober.ProbeStatus{
				probespec.Startup: {Result: results.Failure, Consecutive: 30, FailureThreshold: 30, LastProbeTime: t0,
					History: runs(results.Failure), KillDeferred: "kill rate limit: 5 at once, then 1 per 1s"}}}),
			subjects: []string{explain.SubjectKillDeferred, explain.SubjectNotStarted},
			text:     []string{"kill rate limit", "the startup probe failed 30 times"},
		},
		{
			name:     "created, not started",
			e:        explain.Subject{Container: node.Container{State: node.StateCreated}},
			subjects: []string{explain.SubjectNotRunning},
			text:     []string{"has not started"},
		},
		{
			name:     "unknown state",
			e:        explain.Subject{Container: node.Container{State: node.StateUnknown}},
			subjects: []string{explain.SubjectNotRunning},
			text:     []string{"does not know"},
		},
		{
			name: "healthy",
			e: running(&prober.ContainerStatus{Started: true, Ready: true, Probes: map[probespec.Type]prober.ProbeStatus{
				probespec.Readiness: {Result: results.Success, Consecutive: 9, LastProbeTime: t0, History: runs(results.Success)}}}),
			subjects: []string{explain.SubjectHealthy},
			text:     []string{"readiness Success"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := explain.Container(tt.e)
			var subjects []string
			for _, x := range got {
				subjects = append(subjects, x.Subject)
			}
			if strings.Join(subjects, ",") != strings.Join(tt.subjects, ",") {
				t.Fatalf("subjects %v, want %v", subjects, tt.subjects)
			}
			for _, want := range tt.text {
				if !strings.Contains(got[0].Text, want) {
					t.Errorf("text %q lacks %q", got[0].Text, want)
				}
			}
		})
	}
}

func TestExplainRestartFailed(t *testing.T) {
	e := running(&prober.ContainerStatus{Started: true, Ready: true,
		Restarts: []prober.Restart{
			{Time: t0, ContainerID: "old1", ProbeType: probespec.Startup, GracePeriod: 2 * time.Second, Message: "first"},
			{Time: t0.Add(time.Minute), ContainerID: "old2", ProbeType: probespec.Startup, GracePeriod: 2 * time.Second, Message: "second", Err: "boom"},
		}})
	got := explain.Container(e)
	x := got[len(got)-1]
	if x.Subject != explain.SubjectRestarted || !x.HasProbe || x.ProbeType != probespec.Startup || len(x.Restarts) != 2 {
		t.Fatalf("explanation %v", x)
	}
	for _, want := range []string{"2 time(s)", "old2", "second", "the stop failed: boom"} {
		if !strings.Contains(x.Text, want) {
			t.Errorf("text %q lacks %q", x.Text, want)
		}
	}
}

func specWith(t probespec.Type, p *corev1.Probe) (cp probespec.ContainerProbes) {
	switch t {
	case probespec.Liveness:
		cp.Liveness = p
	case probespec.Readiness:
		cp.Readiness = p
	case probespec.Startup:
		cp.Startup = p
	}
	return cp
}
