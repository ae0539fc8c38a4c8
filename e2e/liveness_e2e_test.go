//go:build e2e

package e2e_test

import (
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/probelet/probelet/internal/testbed"
	"github.com/probelet/probelet/probespec"
)

// TestLivenessFailureStopsTheContainer: when the app stops listening, a
// TCP liveness probe (period 1 s, failureThreshold 3) fails and probelet
// stops the container through CRI after failureThreshold × period (± one
// period), with the kubelet's grace period: the probe's, else the pod's,
// never under 2 s. The app ignores SIGTERM, so the exit time shows the
// grace period containerd was given: not before it, and nearer to it than
// to the longer grace a wrong rule would have given (the pod's, or the
// API's default 30 s). How long the runtime takes to deliver the SIGKILL
// and reap the app is not probelet's: on a busy node over a second.
func TestLivenessFailureStopsTheContainer(t *testing.T) {
	t.Parallel()
	bed := testbed.Start(t)
	// The three subtests break their apps together: with all three pods
	// failing liveness at once the kill guard would defer a kill (its
	// FullDisruption), which is not what this test is about.
	d := startProbelet(t, bed, "--kill-guard=off")
	tests := []struct {
		name       string
		podGrace   int64
		probeGrace *int64
		wantGrace  time.Duration
		wrongGrace time.Duration // the nearest longer grace of a wrong rule
	}{
		{name: "probe-grace", podGrace: 30, probeGrace: ptr[int64](3), wantGrace: 3 * time.Second, wrongGrace: 30 * time.Second},
		{name: "pod-grace", podGrace: 4, wantGrace: 4 * time.Second, wrongGrace: 30 * time.Second},
		{name: "min-grace", podGrace: 30, probeGrace: ptr[int64](1), wantGrace: 2 * time.Second, wrongGrace: 30 * time.Second},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			live := tcpProbe(appPort, 1, 3)
			live.TerminationGracePeriodSeconds = tc.probeGrace
			a := runApp(t, bed, appSpec{name: tc.name, cmd: stubbornWebApp, grace: &tc.podGrace,
				probes: probespec.ContainerProbes{Liveness: live}})
			waitProbe(t, d, a, "liveness", "Success")
			checkLivenessKill(t, d, bed, a, live, tc.wantGrace, tc.wrongGrace)
		})
	}
}

// checkLivenessKill breaks the app and checks the kill's timing, grace
// period, record and the container's exit.
func checkLivenessKill(t *testing.T, d *daemon, bed *testbed.Bed, a app, live *corev1.Probe, grace, wrongGrace time.Duration) {
	t.Helper()
	period := time.Duration(live.PeriodSeconds) * time.Second
	broke := time.Now()
	mustExec(t, bed, a.ctr, "killall", "-KILL", "httpd")
	var r restartView
	eventually(t, 10*time.Second, "a liveness restart record", func() (bool, string) {
		v := d.describe(a.ctr)
		if len(v.Restarts) == 0 {
			return false, fmt.Sprintf("liveness %+v", v.Probes["liveness"])
		}
		r = v.Restarts[0]
		return true, ""
	})
	wantKill := time.Duration(live.FailureThreshold) * period
	after := r.Time.Sub(broke)
	t.Logf("kill decided %v after the app stopped listening (want %v ± %v)", after.Round(time.Millisecond), wantKill, period)
	if after < wantKill-period || after > wantKill+period {
		t.Errorf("killed %v after the app stopped listening; want %v ± %v", after, wantKill, period)
	}
	wantMsg := fmt.Sprintf("Container %s failed liveness probe, will be restarted", a.name)
	if r.ContainerID != a.ctr || r.Probe != "liveness" || r.GracePeriod != grace.String() || r.Message != wantMsg || r.Error != "" {
		t.Errorf("restart record %+v; want liveness, grace %v, %q", r, grace, wantMsg)
	}
	st := waitExited(t, bed, a.ctr, wrongGrace+10*time.Second)
	took := st.FinishedAt.Sub(r.Time)
	t.Logf("container exited %v after the decision (grace %v), exit code %d", took.Round(time.Millisecond), grace, st.ExitCode)
	if took < grace-200*time.Millisecond || took >= (grace+wrongGrace)/2 {
		t.Errorf("container exited %v after the kill decision; want its grace period %v, not %v (SIGTERM is ignored)", took, grace, wrongGrace)
	}
	if st.ExitCode != 137 {
		t.Errorf("exit code %d, want 137 (SIGKILL after the grace period)", st.ExitCode)
	}
	checkKilledView(t, d, a)
}

// checkKilledView: probelet shows the container exited, the liveness
// failure on hold and one restart issued.
func checkKilledView(t *testing.T, d *daemon, a app) {
	t.Helper()
	eventually(t, 5*time.Second, "probelet to see the exit", func() (bool, string) {
		c, ok := d.ctr(a.ctr)
		l := c.Probes["liveness"]
		return ok && c.State == testbed.StateExited && c.RestartsIssued == 1 && l.Result == "Failure" && l.OnHold,
			fmt.Sprintf("listed %v: %+v", ok, c)
	})
}

// waitProbe waits until the container's probe publishes result and its
// latest run had that result too (a seeded value is not a run).
func waitProbe(t *testing.T, d *daemon, a app, probe, result string) {
	t.Helper()
	eventually(t, 15*time.Second, fmt.Sprintf("%s %s probe %s", a.name, probe, result), func() (bool, string) {
		p := d.describe(a.ctr).Probes[probe]
		n := len(p.History)
		return p.Result == result && n > 0 && p.History[n-1].Result == result, fmt.Sprintf("%+v", p)
	})
}

// waitExited waits until containerd reports the container exited.
func waitExited(t *testing.T, bed *testbed.Bed, ctrID string, timeout time.Duration) testbed.ContainerState {
	t.Helper()
	var st testbed.ContainerState
	eventually(t, timeout, "the container to exit", func() (bool, string) {
		var err error
		st, err = bed.ContainerState(ctrID)
		return err == nil && st.State == testbed.StateExited, fmt.Sprintf("%+v, %v", st, err)
	})
	return st
}
