package readiness

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/probelet/probelet/node"
	"github.com/probelet/probelet/prober"
	"github.com/probelet/probelet/prober/results"
	"github.com/probelet/probelet/probespec"
)

const (
	webOnly  = `{"web": {"readinessProbe": {"tcpSocket": {"port": 80}}}}`
	webSide  = `{"web": {"readinessProbe": {"tcpSocket": {"port": 80}}}, "side": {"readinessProbe": {"tcpSocket": {"port": 81}}}}`
	liveOnly = `{"web": {"livenessProbe": {"tcpSocket": {"port": 80}}}}`
	badSide  = `{"web": {"readinessProbe": {"tcpSocket": {"port": 80}}}, "side": {"readinessProbe": {}}}`
)

// agentStart is when the agent under test started; ctr's containers start
// after it unless oldCtr says otherwise.
var agentStart = time.Unix(1e9, 0)

func ctr(name string, state node.ContainerState, started, ready bool, probes map[probespec.Type]prober.ProbeStatus) prober.ContainerStatus {
	return prober.ContainerStatus{ContainerName: name, ContainerID: name + "-1", State: state, Started: started, Ready: ready, Probes: probes,
		StartedAt: agentStart.Add(time.Second)}
}

// oldCtr is c running since before the agent started (probelet restarted).
func oldCtr(c prober.ContainerStatus) prober.ContainerStatus {
	c.StartedAt = agentStart.Add(-time.Hour)
	return c
}

// notProbedYet is readiness as the engine publishes it when a worker
// first follows a container: the kubelet's initial Failure, no run.
func notProbedYet() map[probespec.Type]prober.ProbeStatus {
	return map[probespec.Type]prober.ProbeStatus{probespec.Readiness: {Type: probespec.Readiness, Result: results.Failure,
		FailureThreshold: 3, SuccessThreshold: 1}}
}

func readiness(r results.Result, unpublished bool) map[probespec.Type]prober.ProbeStatus {
	return map[probespec.Type]prober.ProbeStatus{probespec.Readiness: {Type: probespec.Readiness, Result: r, Unpublished: unpublished,
		Consecutive: 3, FailureThreshold: 3, SuccessThreshold: 1, LastOutput: "connection refused", LastProbeTime: time.Unix(1e9, 0),
		History: []prober.ProbeRecord{{Result: r, Output: "connection refused"}}}}
}

func TestDecide(t *testing.T) {
	running, exited := node.StateRunning, node.StateExited
	tests := []struct {
		name          string
		annotation    string
		sts           []prober.ContainerStatus
		wantStatus    corev1.ConditionStatus
		wantReason    string
		wantMessage   string // substring
		wantUndecided bool
		apiRunning    []string // containers the kubelet reports running
	}{
		{"ready", webOnly, []prober.ContainerStatus{ctr("web", running, true, true, readiness(results.Success, false))},
			corev1.ConditionTrue, "", messageAllReady, false, nil},
		{"readiness failing", webOnly, []prober.ContainerStatus{ctr("web", running, true, false, readiness(results.Failure, false))},
			corev1.ConditionFalse, probespec.ReasonReadinessProbeFailed, "container web: the readiness probe failed 3 times in a row", false, nil},
		{"not started", webOnly, []prober.ContainerStatus{ctr("web", running, false, false, map[probespec.Type]prober.ProbeStatus{
			probespec.Startup: {Type: probespec.Startup, Result: results.Unknown, FailureThreshold: 30}, probespec.Readiness: {Type: probespec.Readiness, Result: results.Failure}})},
			corev1.ConditionFalse, probespec.ReasonStartupNotSucceeded, "container web: the startup probe has not run yet", false, nil},
		{"exited", webOnly, []prober.ContainerStatus{ctr("web", exited, false, false, readiness(results.Failure, false))},
			corev1.ConditionFalse, probespec.ReasonContainerNotRunning, "container web: the container exited", false, nil},
		{"not created yet", webOnly, nil, corev1.ConditionFalse, probespec.ReasonContainerNotCreated, "container web: the container has not been created yet", false, nil},
		{"second container holds", webSide, []prober.ContainerStatus{
			ctr("side", running, true, false, readiness(results.Failure, false)), ctr("web", running, true, true, readiness(results.Success, false))},
			corev1.ConditionFalse, probespec.ReasonReadinessProbeFailed, "container side:", false, nil},
		{"both hold: the first named, the others listed", webSide, []prober.ContainerStatus{
			ctr("side", running, true, false, readiness(results.Failure, false)), ctr("web", running, true, false, readiness(results.Failure, false))},
			corev1.ConditionFalse, probespec.ReasonReadinessProbeFailed, "(also not ready: web)", false, nil},
		{"rejected readiness spec holds (fail safe)", badSide, []prober.ContainerStatus{ctr("web", running, true, true, readiness(results.Success, false))},
			corev1.ConditionFalse, probespec.ReasonProbeSpecRejected, "container side: its probes were rejected: readinessProbe", false, nil},
		{"no readiness probes: True", liveOnly, []prober.ContainerStatus{ctr("web", running, true, true, nil)},
			corev1.ConditionTrue, "", messageNoProbes, false, nil},
		{"no annotation: True", "", nil, corev1.ConditionTrue, "", messageNoProbes, false, nil},
		{"after a probelet restart, not followed yet: leave it", webOnly,
			[]prober.ContainerStatus{oldCtr(ctr("web", running, true, false, readiness(results.Unknown, true)))}, "", "", "", true, nil},
		{"after a probelet restart, the initial not-ready published but not probed yet: leave it", webOnly,
			[]prober.ContainerStatus{oldCtr(ctr("web", running, true, false, notProbedYet()))}, "", "", "", true, nil},
		{"after a probelet restart, probed and failing: not ready", webOnly,
			[]prober.ContainerStatus{oldCtr(ctr("web", running, true, false, readiness(results.Failure, false)))},
			corev1.ConditionFalse, probespec.ReasonReadinessProbeFailed, "container web: the readiness probe failed", false, nil},
		{"a container started since probelet did, not probed yet: starts not ready", webOnly,
			[]prober.ContainerStatus{ctr("web", running, true, false, notProbedYet())},
			corev1.ConditionFalse, probespec.ReasonReadinessProbeFailed, "container web: the readiness probe has not run yet", false, nil},
		{"an exited container from before the restart: not running", webOnly,
			[]prober.ContainerStatus{oldCtr(ctr("web", exited, true, false, notProbedYet()))},
			corev1.ConditionFalse, probespec.ReasonContainerNotRunning, "container web: the container exited", false, nil},
		{"running in the API, not known to probelet yet (before its runtime sync): leave it", webOnly, nil,
			"", "", "", true, []string{"web"}},
		{"running in the API, another container unknown: not created", webSide,
			[]prober.ContainerStatus{ctr("web", running, true, true, readiness(results.Success, false))},
			corev1.ConditionFalse, probespec.ReasonContainerNotCreated, "container side: the container has not been created yet", false, []string{"web"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			apiRunning := map[string]bool{}
			for _, name := range tc.apiRunning {
				apiRunning[name] = true
			}
			v, undecided := decide(probespec.NewMemo(1<<20).Parse(tc.annotation), tc.sts, apiRunning, agentStart)
			if undecided != tc.wantUndecided {
				t.Fatalf("undecided = %v, want %v (%+v)", undecided, tc.wantUndecided, v)
			}
			if undecided {
				return
			}
			if v.status != tc.wantStatus || v.reason != tc.wantReason || !strings.Contains(v.message, tc.wantMessage) {
				t.Fatalf("verdict = %+v, want %s %s containing %q", v, tc.wantStatus, tc.wantReason, tc.wantMessage)
			}
		})
	}
}
