package cli_test

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/probelet/probelet/cri/server/servertest"
	"github.com/probelet/probelet/node"
	"github.com/probelet/probelet/prober"
	"github.com/probelet/probelet/prober/results"
	"github.com/probelet/probelet/probespec"
)

// TestAProbeThatHasNotRunSaysSo: a readiness probe inside its initial
// delay holds the kubelet's initial result, Failure, which is no answer:
// describe and ps -o wide say it has not run.
func TestAProbeThatHasNotRunSaysSo(t *testing.T) {
	started := servertest.Now.Add(-time.Second)
	readiness := &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"true"}}},
		InitialDelaySeconds: 60, TimeoutSeconds: 1, PeriodSeconds: 10, SuccessThreshold: 1, FailureThreshold: 3}
	status := servertest.NewStatus(prober.ContainerStatus{
		PodUID: "uid-slow", PodName: "slow", PodNamespace: "default", ContainerName: "app", ContainerID: "slow0000000000000000",
		State: node.StateRunning, StartedAt: started, Started: true,
		Spec: probespec.ContainerProbes{Readiness: readiness},
		Probes: map[probespec.Type]prober.ProbeStatus{
			probespec.Readiness: {Type: probespec.Readiness, Result: results.Failure, SuccessThreshold: 1, FailureThreshold: 3},
		},
	})
	view := servertest.NewView(node.Pod{UID: "uid-slow", Name: "slow", Namespace: "default", CreatedAt: started,
		Containers: []node.Container{{ID: "slow0000000000000000", Name: "app", State: node.StateRunning, StartedAt: started}}})
	_, endpoint := servertest.Start(t, status, view)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"describe", "slow/app"}, "Failure (not run yet)"},
		{[]string{"ps", "-o", "wide"}, "Failure (not run yet)"},
	} {
		r := probectl(t, endpoint, tc.args...)
		if r.code != 0 || !strings.Contains(r.out, tc.want) || strings.Contains(r.out, "0x") || strings.Contains(r.out, "current run: 0") {
			t.Errorf("probectl %s: code %d\n%s%s\nwant %q", strings.Join(tc.args, " "), r.code, r.out, r.errOut, tc.want)
		}
	}
}
