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

// TestReadinessFollowsTheApp: an HTTP readiness probe turns the container
// ready, not ready when the page goes away or httpd dies, and ready again
// when the app is back; liveness is untouched and nothing is killed.
func TestReadinessFollowsTheApp(t *testing.T) {
	t.Parallel()
	bed := testbed.Start(t)
	d := startProbelet(t, bed)
	a := runApp(t, bed, appSpec{name: "web", cmd: webApp, probes: probespec.ContainerProbes{
		Readiness: httpProbe("/", 1, 2),
	}})

	waitReady(t, d, a, true, "probelet test bed\n")
	mustExec(t, bed, a.ctr, "mv", indexDoc, indexDoc+".off")
	waitReady(t, d, a, false, "HTTP probe failed with statuscode: 404")
	mustExec(t, bed, a.ctr, "mv", indexDoc+".off", indexDoc)
	waitReady(t, d, a, true, "probelet test bed\n")

	mustExec(t, bed, a.ctr, "killall", "httpd")
	waitReady(t, d, a, false, "connect: connection refused")
	mustExec(t, bed, a.ctr, "sh", "-c", "httpd -p 8080 -h /var/www")
	c := waitReady(t, d, a, true, "probelet test bed\n")

	if c.State != testbed.StateRunning || c.RestartsIssued != 0 {
		t.Errorf("after the flips: state %s, restarts issued %d; want running, none", c.State, c.RestartsIssued)
	}
	r := c.Probes["readiness"]
	if r.Method != "http" || r.LastProbeTime == nil || time.Since(*r.LastProbeTime) > 5*time.Second {
		t.Errorf("readiness probe: method %q, last probe %v; want http, recent", r.Method, r.LastProbeTime)
	}
}

// waitReady polls `probectl ps -o json` until the container's readiness is
// want with a last output containing output, and returns that item.
func waitReady(t *testing.T, d *daemon, a app, want bool, output string) ctrView {
	t.Helper()
	var got ctrView
	result := map[bool]string{true: "Success", false: "Failure"}[want]
	eventually(t, 15*time.Second, fmt.Sprintf("%s ready=%v with output %q", a.name, want, output), func() (bool, string) {
		c, ok := d.ctr(a.ctr)
		if !ok {
			return false, "not listed by probectl ps"
		}
		got = c
		r := c.Probes["readiness"]
		return c.Ready == want && r.Result == result && strings.Contains(r.LastOutput, output),
			fmt.Sprintf("ready=%v readiness=%+v", c.Ready, r)
	})
	return got
}
