package prober

import (
	"errors"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/probelet/probelet/node"
	"github.com/probelet/probelet/prober/probe"
	"github.com/probelet/probelet/prober/results"
	"github.com/probelet/probelet/probespec"
)

// The kubelet's rules on a bare worker, without a Manager.

var r0 = time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)

func bareWorker(t probespec.Type, p *corev1.Probe) *worker {
	if p == nil {
		p = &corev1.Probe{}
	}
	return &worker{typ: t, spec: p, history: newHistory(4)}
}

func TestWorkerDecide(t *testing.T) {
	running := &node.Container{ID: "c1", State: node.StateRunning, StartedAt: r0}
	exited := &node.Container{ID: "c1", State: node.StateExited, StartedAt: r0}
	tests := []struct {
		name     string
		typ      probespec.Type
		probe    *corev1.Probe
		c        *node.Container
		deleting bool
		onHold   bool
		started  bool
		now      time.Time
		want     decision
		// noRestart: the kubelet will not restart the container.
		noRestart bool
	}{
		{"probes a started running container", probespec.Liveness, nil, running, false, false, true, r0, decision{verdict: verdictProbe}, false},
		{"deletion: liveness publishes Success and stops", probespec.Liveness, nil, running, true, false, true, r0,
			decision{verdict: verdictStop, publishes: true, result: results.Success, note: "Pod deletion requested, setting probe result to success"}, false},
		{"deletion: startup on hold just stops", probespec.Startup, nil, running, true, true, false, r0,
			decision{verdict: verdictStop, note: "Pod deletion requested, stopping probe worker"}, false},
		{"deletion: liveness of an exited container just stops", probespec.Liveness, nil, exited, true, false, true, r0,
			decision{verdict: verdictStop, note: "Pod deletion requested, stopping probe worker"}, false},
		{"deletion: readiness keeps probing", probespec.Readiness, nil, running, true, false, true, r0, decision{verdict: verdictProbe}, false},
		{"on hold waits", probespec.Liveness, nil, running, false, true, true, r0, decision{verdict: verdictWait}, false},
		{"not running publishes Failure", probespec.Readiness, nil, exited, false, false, true, r0,
			decision{verdict: verdictWait, publishes: true, result: results.Failure}, false},
		{"initial delay: 4.9 s of 5 waits", probespec.Readiness, &corev1.Probe{InitialDelaySeconds: 5}, running, false, false, true,
			r0.Add(4900 * time.Millisecond), decision{verdict: verdictWait}, false},
		{"initial delay: 5 s of 5 probes", probespec.Readiness, &corev1.Probe{InitialDelaySeconds: 5}, running, false, false, true,
			r0.Add(5 * time.Second), decision{verdict: verdictProbe}, false},
		{"gate: readiness waits for startup", probespec.Readiness, nil, running, false, false, false, r0, decision{verdict: verdictWait}, false},
		{"gate: startup stops probing once started", probespec.Startup, nil, running, false, false, true, r0, decision{verdict: verdictWait}, false},
		{"gate: startup probes until started", probespec.Startup, nil, running, false, false, false, r0, decision{verdict: verdictProbe}, false},
		{"exited, will not restart: Failure and stop", probespec.Readiness, nil, exited, false, false, true, r0,
			decision{verdict: verdictStop, publishes: true, result: results.Failure, note: "Container exited and will not be restarted, stopping probe worker"}, true},
		{"exited, will restart: Failure and wait", probespec.Liveness, nil, exited, false, false, true, r0,
			decision{verdict: verdictWait, publishes: true, result: results.Failure}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w := bareWorker(tc.typ, tc.probe)
			w.onHold = tc.onHold
			if got := w.decide(tc.c, tc.deleting, tc.started, !tc.noRestart, tc.now); got != tc.want {
				t.Fatalf("decide = %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestWorkerInitialDelayCountsFromFirstSeenWhenStartUnknown(t *testing.T) {
	w := bareWorker(probespec.Liveness, &corev1.Probe{InitialDelaySeconds: 3})
	c := &node.Container{ID: "c1", State: node.StateRunning} // no start time
	if d := w.decide(c, false, true, true, r0); d.verdict != verdictWait {
		t.Fatalf("first tick = %v, want a wait", d.verdict)
	}
	if d := w.decide(c, false, true, true, r0.Add(3*time.Second)); d.verdict != verdictProbe {
		t.Fatalf("3 s after first seen = %v, want a probe", d.verdict)
	}
}

func TestWorkerFollowLiftsHoldAndClearsTheOldRun(t *testing.T) {
	w := bareWorker(probespec.Liveness, nil)
	if left, moved := w.follow(&node.Container{ID: "c1"}); !moved || left != (results.Key{}) {
		t.Fatalf("first follow = %v, %v; want moved with nothing left", left, moved)
	}
	w.onHold, w.lastOutput = true, "refused"
	if _, moved := w.follow(&node.Container{ID: "c1"}); moved {
		t.Fatal("following the same container moved")
	}
	left, moved := w.follow(&node.Container{ID: "c2"})
	if !moved || left != (results.Key{ContainerID: "c1", Type: probespec.Liveness}) || w.onHold || w.lastOutput != "" {
		t.Fatalf("restart follow = %v, %v, worker %+v", left, moved, w)
	}
}

func TestWorkerJudge(t *testing.T) {
	tests := []struct {
		name string
		o    outcome
		want judgement
	}{
		{"success", outcome{result: probe.Success}, judgement{result: results.Success, counted: true, metric: resultSuccessful, observe: true}},
		{"warning is a success with an event", outcome{result: probe.Warning, output: "Probe terminated redirects"},
			judgement{result: results.Success, counted: true, metric: resultSuccessful, observe: true,
				reason: probespec.EventProbeWarning, message: "Readiness probe warning: Probe terminated redirects"}},
		{"failure", outcome{result: probe.Failure, output: "refused"},
			judgement{result: results.Failure, counted: true, metric: resultFailed, reason: probespec.EventUnhealthy, message: "Readiness probe failed: refused"}},
		{"unknown without error is a silent failure", outcome{result: probe.Unknown},
			judgement{result: results.Failure, counted: true, metric: resultFailed}},
		{"error is discarded", outcome{result: probe.Unknown, err: errors.New("broke")},
			judgement{result: results.Unknown, reason: probespec.EventUnhealthy, message: "Readiness probe errored and resulted in unknown state: broke"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := bareWorker(probespec.Readiness, nil).judge(tc.o); got != tc.want {
				t.Fatalf("judge = %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

func TestWorkerSettleThresholdsHoldAndKill(t *testing.T) {
	type step struct {
		r             results.Result
		publish, kill bool
	}
	s, f := results.Success, results.Failure
	tests := []struct {
		name     string
		typ      probespec.Type
		probe    *corev1.Probe
		steps    []step
		wantHold bool
	}{
		{"liveness fails at the threshold, then holds", probespec.Liveness, &corev1.Probe{FailureThreshold: 2},
			[]step{{f, false, false}, {f, true, true}}, true},
		{"a success resets the failure run", probespec.Liveness, &corev1.Probe{FailureThreshold: 2},
			[]step{{f, false, false}, {s, true, false}, {f, false, false}}, false},
		{"readiness needs successThreshold successes", probespec.Readiness, &corev1.Probe{SuccessThreshold: 2},
			[]step{{s, false, false}, {s, true, false}, {s, true, false}}, false},
		{"readiness never kills", probespec.Readiness, &corev1.Probe{FailureThreshold: 1}, []step{{f, true, false}}, false},
		{"startup success holds", probespec.Startup, nil, []step{{s, true, false}}, true},
		{"startup failure kills and holds", probespec.Startup, &corev1.Probe{FailureThreshold: 1}, []step{{f, true, true}}, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w := bareWorker(tc.typ, tc.probe)
			for i, st := range tc.steps {
				if publish, kill := w.settle(st.r); publish != st.publish || kill != st.kill {
					t.Fatalf("step %d (%v): publish, kill = %v, %v; want %v, %v", i, st.r, publish, kill, st.publish, st.kill)
				}
			}
			if w.onHold != tc.wantHold {
				t.Fatalf("on hold = %v, want %v", w.onHold, tc.wantHold)
			}
		})
	}
}

func TestWorkerRememberKeepsErrorsAsUnknownRuns(t *testing.T) {
	w := bareWorker(probespec.Liveness, nil)
	o := outcome{start: r0, err: errors.New("exec failed")}
	w.remember(o, w.judge(o))
	recs := w.history.records()
	if len(recs) != 1 || recs[0].Result != results.Unknown || recs[0].Error != "exec failed" || w.lastOutput != "exec failed" {
		t.Fatalf("history = %+v, last output %q", recs, w.lastOutput)
	}
}
