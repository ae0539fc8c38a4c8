//go:build e2e

package e2e_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/probelet/probelet/internal/testbed"
	"github.com/probelet/probelet/probespec"
)

// TestProbeletRestart: probelet is stopped (SIGTERM) and later crashes
// (SIGKILL, leaving its socket behind) while containers run. Each new
// probelet learns the running containers from NRI's Synchronize, probes
// them again and kills nothing, though its liveness probes fail at the
// first failure.
func TestProbeletRestart(t *testing.T) {
	t.Parallel()
	bed := testbed.Start(t)
	d := startProbelet(t, bed)
	// The startup probe holds the one-failure liveness probe back until
	// httpd listens: probes start with the container, before the app.
	web := runApp(t, bed, appSpec{name: "web", cmd: webApp, probes: probespec.ContainerProbes{
		Liveness: tcpProbe(appPort, 1, 1), Readiness: httpProbe("/", 1, 1), Startup: tcpProbe(appPort, 1, 30),
	}})
	ex := runApp(t, bed, appSpec{name: "exec", cmd: sleeper, probes: probespec.ContainerProbes{
		Liveness: execProbe(1, 1, "true"), Startup: execProbe(1, 3, "true"),
	}})
	for _, a := range []app{web, ex} {
		checkRelearned(t, d, a, time.Time{})
	}

	for _, crash := range []bool{false, true} {
		if crash {
			d.kill()
		} else {
			d.stop()
		}
		restarted := time.Now()
		d.start()
		// start waited for Synchronize to be handled: it gave both.
		eventually(t, daemonStartTimeout, fmt.Sprintf("crash=%v: Synchronize to give 2 containers", crash), func() (bool, string) {
			got := d.logField(msgSynchronized, "containers")
			return got == "2", fmt.Sprintf("Synchronize logged %q containers", got)
		})
		for _, a := range []app{web, ex} {
			checkRelearned(t, d, a, restarted)
			checkPodCreatedAt(t, d, bed, a)
		}
		if kills := d.logsMatching("Killing container"); len(kills) > 0 {
			t.Errorf("crash=%v: the new probelet killed containers: %v", crash, kills)
		}
	}
	for _, a := range []app{web, ex} {
		if st, err := bed.ContainerState(a.ctr); err != nil || st.State != testbed.StateRunning {
			t.Errorf("%s: %+v, %v; want still running", a.name, st, err)
		}
	}
}

// checkRelearned: the new probelet lists the container, has probed it
// since it started and finds it started and ready, with no restart issued.
func checkRelearned(t *testing.T, d *daemon, a app, since time.Time) {
	t.Helper()
	eventually(t, 10*time.Second, a.name+" probed by the new probelet", func() (bool, string) {
		v := d.describe(a.ctr)
		l := v.Probes["liveness"]
		probed := len(l.History) > 0 && l.History[len(l.History)-1].Time.After(since) && l.Result == "Success"
		return probed && v.Started && v.Ready && v.RestartsIssued == 0,
			fmt.Sprintf("started=%v ready=%v restarts=%d liveness %+v", v.Started, v.Ready, v.RestartsIssued, l)
	})
}

// checkPodCreatedAt: a pod learned from Synchronize (NRI carries no
// creation time) shows containerd's creation time on probelet's socket.
func checkPodCreatedAt(t *testing.T, d *daemon, bed *testbed.Bed, a app) {
	t.Helper()
	out, err := bed.Crictl("inspectp", a.pod)
	if err != nil {
		t.Fatalf("crictl inspectp on containerd: %v: %s", err, out)
	}
	want := podCreatedAt(t, out)
	if want == "" || want == "0" {
		t.Fatalf("containerd's inspectp has no createdAt:\n%s", out)
	}
	eventually(t, 10*time.Second, a.name+"'s pod createdAt on probelet's socket", func() (bool, string) {
		got := podCreatedAt(t, []byte(crictlOn(t, d, "inspectp", a.pod)))
		return got == want, fmt.Sprintf("createdAt %s, containerd's %s", got, want)
	})
}

// podCreatedAt reads .status.createdAt from crictl inspectp, a JSON string
// or number of Unix nanoseconds.
func podCreatedAt(t *testing.T, out []byte) string {
	t.Helper()
	var v struct {
		Status struct {
			CreatedAt json.RawMessage `json:"createdAt"`
		} `json:"status"`
	}
	if err := json.Unmarshal(out, &v); err != nil {
		t.Fatalf("crictl inspectp: %v", err)
	}
	return strings.Trim(string(v.Status.CreatedAt), `"`)
}
