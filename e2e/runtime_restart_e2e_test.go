//go:build e2e

package e2e_test

import (
	"fmt"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/probelet/probelet/internal/testbed"
	"github.com/probelet/probelet/probespec"
)

const (
	// maxReconnect is how long probelet may take to register again once
	// containerd's NRI socket is back.
	maxReconnect  = 2 * time.Second
	logTimeLayout = "2006-01-02T15:04:05.000Z0700"
	// engineHistory is how many runs the engine keeps per probe (its
	// default), as the socket shows them.
	engineHistory = 10
)

// TestRuntimeRestart: the runtime (containerd, or CRI-O on a CRI-O bed) is
// stopped under running containers, gracefully (SIGTERM) and then as a
// crash (SIGKILL), and kept down until an exec probe has failed to run.
// Those errored runs are not counted, so an exec liveness probe with
// failureThreshold 1 kills nothing; HTTP and TCP probes go on. Once the
// runtime is back probelet registers again within 2 s, and every container
// stays ready with its results kept.
func TestRuntimeRestart(t *testing.T) {
	t.Parallel()
	bed := testbed.Start(t)
	d := startProbelet(t, bed)
	web := runApp(t, bed, appSpec{name: "web", cmd: webApp, probes: probespec.ContainerProbes{
		// The startup probe holds liveness back until httpd listens: the
		// first probe runs as the container starts, and one failure would
		// kill it (as the kubelet would, probing that early).
		Liveness: tcpProbe(appPort, 1, 1), Readiness: httpProbe("/", 1, 1), Startup: tcpProbe(appPort, 1, 30),
	}})
	ex := runApp(t, bed, appSpec{name: "exec", cmd: sleeper, probes: probespec.ContainerProbes{
		Liveness: execProbe(1, 1, "true"), Readiness: execProbe(1, 1, "true"),
	}})
	waitReady(t, d, web, true, "")
	waitProbe(t, d, web, "liveness", "Success") // runs once startup succeeded, maybe after readiness
	waitReady(t, d, ex, true, "")

	watch := watchSteady(d, web.ctr, ex.ctr)
	for i, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGKILL} {
		before := d.describe(web.ctr)
		down := time.Now()
		if err := bed.StopRuntime(sig); err != nil {
			t.Fatalf("stop %s with %v: %v", bed.Runtime(), sig, err)
		}
		waitDowntimeRuns(t, d, web, ex, down)
		if err := bed.StartRuntime(); err != nil {
			t.Fatalf("start %s after %v: %v", bed.Runtime(), sig, err)
		}
		took := waitReregistered(t, d, bed, i+2)
		t.Logf("%s stopped with %v, down %v: probelet registered again %v after the NRI socket came back",
			bed.Runtime(), sig, time.Since(down).Round(time.Millisecond), took.Round(time.Millisecond))
		if took > maxReconnect {
			t.Errorf("reconnect after %v took %v, want ≤ %v", sig, took, maxReconnect)
		}
		checkResultsKept(t, d, web, before)
	}
	// Let the exec probes run against the new runtime too.
	waitProbe(t, d, ex, "liveness", "Success")
	violations, polls := watch.stop()
	if len(violations) > 0 || polls == 0 {
		t.Errorf("over %d polls: %d violations: %q", polls, len(violations), violations)
	}
	for _, a := range []app{web, ex} {
		if st, err := bed.ContainerState(a.ctr); err != nil || st.State != testbed.StateRunning {
			t.Errorf("%s: %+v, %v; want still running", a.name, st, err)
		}
	}
	if kills := d.logsMatching("Killing container"); len(kills) > 0 {
		t.Errorf("probelet killed containers: %v", kills)
	}
}

// waitDowntimeRuns waits, while containerd is down, until the exec
// liveness probe has run and errored (not counted: no kill) and the HTTP
// readiness probe, which needs no runtime, has kept succeeding.
func waitDowntimeRuns(t *testing.T, d *daemon, web, ex app, down time.Time) {
	t.Helper()
	eventually(t, 10*time.Second, "probe runs while containerd is down", func() (bool, string) {
		var errored, served bool
		for _, r := range d.describe(ex.ctr).Probes["liveness"].History {
			errored = errored || (r.Time.After(down) && r.Error != "" && r.Result == "Unknown")
		}
		for _, r := range d.describe(web.ctr).Probes["readiness"].History {
			served = served || (r.Time.After(down) && r.Result == "Success")
		}
		return errored && served, fmt.Sprintf("exec liveness errored: %v, http readiness succeeded: %v", errored, served)
	})
}

// waitReregistered waits for the n-th NRI registration in the log and
// returns how long after the NRI socket was created it happened.
func waitReregistered(t *testing.T, d *daemon, bed *testbed.Bed, n int) time.Duration {
	t.Helper()
	var regs []logEntry
	eventually(t, 10*time.Second, fmt.Sprintf("NRI registration #%d", n), func() (bool, string) {
		regs = d.logsMatching("Registered with the runtime over NRI")
		code, body := d.healthz()
		return len(regs) >= n && code == 200, fmt.Sprintf("%d registrations, /healthz %d %s", len(regs), code, body)
	})
	at, err := time.Parse(logTimeLayout, regs[n-1].str("ts"))
	if err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(bed.NRISocket())
	if err != nil {
		t.Fatal(err)
	}
	return at.Sub(st.ModTime())
}

// checkResultsKept: the same container is still probed with its earlier
// runs on record and its run of successes not reset.
func checkResultsKept(t *testing.T, d *daemon, a app, before detailView) {
	t.Helper()
	after := d.describe(a.ctr)
	for _, name := range []string{"liveness", "readiness"} {
		b, n := before.Probes[name], after.Probes[name]
		if n.Result != "Success" || n.Consecutive < b.Consecutive || len(n.History) == 0 || len(b.History) == 0 {
			t.Errorf("%s after the restart: %+v; before: %+v", name, n, b)
			continue
		}
		// A history that kept its runs still holds those from before the
		// restart, unless its ring (engineHistory runs) filled up since:
		// containerd can take over ten seconds to stop and start again on
		// a loaded node, and the probes that need no runtime run on.
		if first := n.History[0].Time; first.After(b.History[len(b.History)-1].Time) && len(n.History) < engineHistory {
			t.Errorf("%s history restarted at %v with %d runs: earlier runs were dropped", name, first, len(n.History))
		}
	}
	if !after.Ready || after.RestartsIssued != 0 {
		t.Errorf("after the restart: ready %v, restarts issued %d", after.Ready, after.RestartsIssued)
	}
}
