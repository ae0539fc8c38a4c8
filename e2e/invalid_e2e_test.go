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

// TestInvalidAnnotation: a pod whose probelet.io/probes annotation is
// broken still runs; the error, naming the pod, container and field, is
// on the socket (probectl ps, describe and why; crictl inspect), in the
// log, and hurts no other container.
func TestInvalidAnnotation(t *testing.T) {
	t.Parallel()
	bed := testbed.Start(t)
	d := startProbelet(t, bed)
	good := runApp(t, bed, appSpec{name: "good", cmd: webApp, probes: probespec.ContainerProbes{Readiness: httpProbe("/", 1, 1)}})
	tests := []struct {
		name, anno string
		want       []string // in the spec error
	}{
		{name: "syntax", anno: `{"syntax": {"livenessProbe": `, want: []string{"invalid JSON", "line 1"}},
		{name: "port", anno: `{"port": {"livenessProbe": {"tcpSocket": {"port": 70000}}}}`, want: []string{"livenessProbe", "port", "70000"}},
		{name: "handlers", anno: `{"handlers": {"readinessProbe": {"exec": {"command": ["true"]}, "tcpSocket": {"port": 80}}}}`, want: []string{"readinessProbe"}},
		{name: "threshold", anno: `{"threshold": {"livenessProbe": {"exec": {"command": ["true"]}, "successThreshold": 2}}}`, want: []string{"livenessProbe", "successThreshold"}},
	}
	for _, tc := range tests {
		a := runApp(t, bed, appSpec{name: tc.name, cmd: sleeper, rawAnno: &tc.anno})
		c := waitSpecError(t, d, a)
		for _, w := range tc.want {
			if !strings.Contains(c.SpecError, w) {
				t.Errorf("%s: spec error %q does not name %q", tc.name, c.SpecError, w)
			}
		}
		if len(c.Probes) != 0 || c.State != testbed.StateRunning {
			t.Errorf("%s: state %s, probes %v; want running, no probes", tc.name, c.State, c.Probes)
		}
		checkSpecErrorShown(t, d, a, c.SpecError)
	}
	waitReady(t, d, good, true, "probelet test bed\n")
}

func waitSpecError(t *testing.T, d *daemon, a app) ctrView {
	t.Helper()
	var c ctrView
	eventually(t, 10*time.Second, a.name+" listed with a spec error", func() (bool, string) {
		var ok bool
		c, ok = d.ctr(a.ctr)
		return ok && c.SpecError != "", fmt.Sprintf("listed %v: %+v", ok, c)
	})
	return c
}

// checkSpecErrorShown: probectl describe and why, crictl inspect and the
// log carry the error too.
func checkSpecErrorShown(t *testing.T, d *daemon, a app, specErr string) {
	t.Helper()
	for _, cmd := range []string{"describe", "why"} {
		if out := d.mustProbectl(cmd, "default/"+a.name+"/"+a.name); !strings.Contains(out, specErr) {
			t.Errorf("%s: probectl %s does not show the spec error %q:\n%s", a.name, cmd, specErr, out)
		}
	}
	var info struct {
		Probelet struct {
			SpecError string `json:"specError"`
		} `json:"probelet"`
	}
	decodeJSON(t, crictlOn(t, d, "inspect", a.ctr), &info)
	if info.Probelet.SpecError != specErr {
		t.Errorf("%s: crictl inspect shows spec error %q, want %q", a.name, info.Probelet.SpecError, specErr)
	}
	var logged bool
	for _, e := range d.logs() {
		line := fmt.Sprint(e)
		logged = logged || (strings.Contains(line, a.name) && strings.Contains(line, "default") && strings.Contains(line, specErr))
	}
	if !logged {
		t.Errorf("%s: no log line names the pod, container and error %q", a.name, specErr)
	}
	t.Logf("%s: %s", a.name, specErr)
}
