//go:build e2e

package e2e_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/probelet/probelet/internal/testbed"
	"github.com/probelet/probelet/probespec"
)

// TestStartupGatesLivenessAndReadiness: until the exec startup probe
// succeeds, liveness and readiness are not run at all (a liveness probe
// that would fail at once kills nothing); once it succeeds they start.
func TestStartupGatesLivenessAndReadiness(t *testing.T) {
	t.Parallel()
	bed := testbed.Start(t)
	d := startProbelet(t, bed)
	a := runApp(t, bed, appSpec{name: "gated", cmd: sleeper, probes: probespec.ContainerProbes{
		Startup: execProbe(1, 60, "cat", "/tmp/started"),
		// Nothing listens on 8080 while starting up: were liveness
		// probed, one failure would kill the container.
		Liveness:  tcpProbe(appPort, 1, 1),
		Readiness: execProbe(1, 1, "true"),
	}})

	gated := func() (bool, string) {
		v := d.describe(a.ctr)
		l, r, s := v.Probes["liveness"], v.Probes["readiness"], v.Probes["startup"]
		ok := !v.Started && !v.Ready && len(l.History) == 0 && len(r.History) == 0 && v.RestartsIssued == 0
		return ok, fmt.Sprintf("started=%v ready=%v liveness runs %d, readiness runs %d, startup %+v", v.Started, v.Ready, len(l.History), len(r.History), s)
	}
	// Three failed startup runs while the other two stay silent.
	eventually(t, 15*time.Second, "three failed startup runs", func() (bool, string) {
		if ok, state := gated(); !ok {
			t.Fatalf("liveness or readiness ran before startup succeeded: %s", state)
		}
		s := d.describe(a.ctr).Probes["startup"]
		return len(s.History) >= 3 && s.Result == "Unknown" && s.LastOutput != "", fmt.Sprintf("startup %+v", s)
	})
	during(t, 1500*time.Millisecond, "startup gating", gated)

	mustExec(t, bed, a.ctr, "sh", "-c", "httpd -p 8080 -h /var/www && touch /tmp/started")
	v := waitStarted(t, d, a)
	if s := v.Probes["startup"]; s.Result != "Success" || !s.OnHold || s.Method != "exec" {
		t.Errorf("startup after success: %+v; want Success, on hold, exec", s)
	}
	if st, err := bed.ContainerState(a.ctr); err != nil || st.State != testbed.StateRunning || v.RestartsIssued != 0 {
		t.Errorf("container %+v (%v), restarts issued %d; want running, none", st, err, v.RestartsIssued)
	}
}

// waitStarted waits until the container is started and ready, with
// liveness and readiness runs on record.
func waitStarted(t *testing.T, d *daemon, a app) detailView {
	t.Helper()
	var v detailView
	eventually(t, 10*time.Second, "started, ready and probed", func() (bool, string) {
		v = d.describe(a.ctr)
		l, r := v.Probes["liveness"], v.Probes["readiness"]
		return v.Started && v.Ready && len(l.History) > 0 && l.Result == "Success" && len(r.History) > 0,
			fmt.Sprintf("started=%v ready=%v liveness %+v readiness %+v", v.Started, v.Ready, l, r)
	})
	return v
}
