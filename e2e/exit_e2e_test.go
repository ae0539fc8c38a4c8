//go:build e2e

package e2e_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/probelet/probelet/internal/testbed"
	"github.com/probelet/probelet/prober/spec"
)

// TestContainerExitingByItself: a container that exits on its own is not
// ready (Failure) and is not killed: probelet issues no StopContainer.
func TestContainerExitingByItself(t *testing.T) {
	t.Parallel()
	bed := testbed.Start(t)
	d := startProbelet(t, bed)
	a := runApp(t, bed, appSpec{name: "quitter", cmd: shell(`echo started; touch /tmp/up; sleep 3; exit 7`), probes: spec.ContainerProbes{
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
