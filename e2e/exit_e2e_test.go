//go:build e2e

package e2e_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/probelet/probelet/internal/testbed"
	"github.com/probelet/probelet/probespec"
)

// TestContainerExitingByItself: a container that exits on its own is not
// ready (Failure) and is not killed: probelet issues no StopContainer.
func TestContainerExitingByItself(t *testing.T) {
	t.Parallel()
	bed := testbed.Start(t)
	d := startProbelet(t, bed)
	a := runApp(t, bed, appSpec{name: "quitter", cmd: shell(`echo started; touch /tmp/up; sleep 3; exit 7`), probes: probespec.ContainerProbes{
		Liveness:  execProbe(1, 1, "true"),
		Readiness: execProbe(1, 1, "cat", "/tmp/up"),
	}})
	waitReady(t, d, a, true, "")
	st := waitExited(t, bed, a.ctr, 10*time.Second)
	if st.ExitCode != 7 {
		t.Fatalf("exit code %d, want 7", st.ExitCode)
	}
	eventually(t, 5*time.Second, "probelet to show the exit", func() (bool, string) {
		c, ok := d.ctr(a.ctr)
		return ok && c.State == testbed.StateExited && !c.Ready && c.Probes["readiness"].Result == "Failure",
			fmt.Sprintf("listed %v: %+v", ok, c)
	})
	// Two liveness periods after the exit nothing may have been killed.
	during(t, 2*time.Second, "no kill for an exited container", func() (bool, string) {
		v := d.describe(a.ctr)
		return v.RestartsIssued == 0 && len(v.Restarts) == 0, fmt.Sprintf("restarts %+v", v.Restarts)
	})
	if kills := d.logsMatching("Killing container"); len(kills) > 0 {
		t.Errorf("probelet killed something: %v", kills)
	}
	v := d.describe(a.ctr)
	t.Logf("after the exit: state %s, ready %v, liveness %s (on hold %v), readiness %s: %q",
		v.State, v.Ready, v.Probes["liveness"].Result, v.Probes["liveness"].OnHold, v.Probes["readiness"].Result, v.Probes["readiness"].LastOutput)
}

// TestLivenessFailureCausedByTheExitDoesNotKill reproduces the exit race
// deterministically: the exec liveness probe (sleep, threshold 1) is
// running when the container's init exits, so the runtime kills it with
// the container and the probe fails at the very moment of the exit, while
// containerd's exit event may still be on its way. The kubelet acts on a
// liveness failure only for a running container; probelet must neither
// stop the container nor report a kill.
func TestLivenessFailureCausedByTheExitDoesNotKill(t *testing.T) {
	t.Parallel()
	bed := testbed.Start(t)
	d := startProbelet(t, bed)
	live := execProbe(1, 1, "sleep", "600")
	live.TimeoutSeconds = 900
	a := runApp(t, bed, appSpec{name: "racer", cmd: shell(`sleep 5; exit 7`), probes: probespec.ContainerProbes{Liveness: live}})
	waitProbeInFlight(t, bed, a)
	st := waitExited(t, bed, a.ctr, 15*time.Second)
	if st.ExitCode != 7 {
		t.Fatalf("exit code %d, want 7 (the container was stopped, not exited by itself)", st.ExitCode)
	}
	// The failed probe reached the kill decision and was held back.
	eventually(t, 10*time.Second, "the liveness failure and the held-back kill", func() (bool, string) {
		v := d.describe(a.ctr)
		return v.Probes["liveness"].Result == "Failure" && len(d.logsMatching("Not killing")) > 0,
			fmt.Sprintf("liveness %+v", v.Probes["liveness"])
	})
	v := d.describe(a.ctr)
	if v.RestartsIssued != 0 || len(v.Restarts) != 0 {
		t.Errorf("restarts recorded for a container that exited by itself: %+v", v.Restarts)
	}
	if kills := d.logsMatching("Killing container"); len(kills) > 0 {
		t.Errorf("probelet stopped the container: %v", kills)
	}
	if out := d.mustProbectl("events", "-o", "json"); strings.Contains(out, `"Killing"`) {
		t.Errorf("a Killing event was published: %s", out)
	}
	t.Logf("held back: %v", d.logsMatching("Not killing")[0])
}

// waitProbeInFlight waits until the exec probe's sleep runs in the container.
func waitProbeInFlight(t *testing.T, bed *testbed.Bed, a app) {
	t.Helper()
	eventually(t, 10*time.Second, "the exec probe to run in the container", func() (bool, string) {
		out, _, err := bed.Exec(a.ctr, "sh", "-c", "ps -o args | grep -c '^sleep 600'")
		return err == nil && strings.TrimSpace(string(out)) != "0", string(out)
	})
}
