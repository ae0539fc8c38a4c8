//go:build e2e

package e2e_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/probelet/probelet/internal/testbed"
	"github.com/probelet/probelet/probespec"
)

// TestCrictlAndProbectl: the unmodified crictl and probectl read a running
// probelet while a readiness probe flips, and show readiness, liveness and
// the last output both ways; probectl's errors have their exit codes.
func TestCrictlAndProbectl(t *testing.T) {
	t.Parallel()
	bed := testbed.Start(t)
	d := startProbelet(t, bed)
	a := runApp(t, bed, appSpec{name: "tools", cmd: webApp, probes: probespec.ContainerProbes{
		Liveness: tcpProbe(appPort, 1, 3), Readiness: httpProbe("/", 1, 1),
	}})
	waitReady(t, d, a, true, "probelet test bed")

	checkContract(t, d)
	checkCrictlLists(t, d, a)
	checkInspect(t, d, a, true, "probelet test bed\n")
	checkProbectlText(t, d, a, true, "probelet test bed")

	mustExec(t, bed, a.ctr, "rm", indexDoc)
	const notFound = "HTTP probe failed with statuscode: 404"
	waitReady(t, d, a, false, notFound)
	checkInspect(t, d, a, false, notFound)
	checkProbectlText(t, d, a, false, notFound)
	checkWhy(t, d, a, "not ready: the readiness probe failed", notFound)

	mustExec(t, bed, a.ctr, "sh", "-c", "echo back > "+indexDoc)
	waitReady(t, d, a, true, "back")
	checkInspect(t, d, a, true, "back\n")

	checkCrictlEvents(t, d, bed, a)
	checkProbectlErrors(t, d)
}

// crictlOn runs the test bed's crictl against probelet's socket.
func crictlOn(t *testing.T, d *daemon, args ...string) string {
	t.Helper()
	full := append([]string{"--runtime-endpoint", d.socket, "--image-endpoint", d.socket, "--timeout", "5s"}, args...)
	cmd := exec.Command(d.bed.CrictlPath(), full...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("crictl %s on probelet's socket: %v: %s", strings.Join(args, " "), err, stderr.String())
	}
	return string(out)
}

func checkCrictlLists(t *testing.T, d *daemon, a app) {
	t.Helper()
	if out := crictlOn(t, d, "version"); !strings.Contains(out, "RuntimeName:  probelet") {
		t.Errorf("crictl version:\n%s", out)
	}
	// probelet's own condition says whether its NRI plugin is registered:
	// it is, since it saw the app start.
	type condition struct {
		Type   string `json:"type"`
		Status bool   `json:"status"`
	}
	var info struct {
		Status struct {
			Conditions []condition `json:"conditions"`
		} `json:"status"`
	}
	out := crictlOn(t, d, "info")
	if err := json.Unmarshal([]byte(out), &info); err != nil {
		t.Fatalf("crictl info: %v:\n%s", err, out)
	}
	if !slices.Contains(info.Status.Conditions, condition{"NRIConnected", true}) {
		t.Errorf("crictl info has no NRIConnected condition that is true:\n%s", out)
	}
	// --tcp-mode auto, as root on this kernel: the short-circuit is in force
	// (the liveness probe below is answered by ebpf), and both tools say so.
	if !slices.Contains(info.Status.Conditions, condition{"TCPShortCircuit", true}) {
		t.Errorf("crictl info has no TCPShortCircuit condition that is true:\n%s", out)
	}
	if out := d.mustProbectl("version"); !strings.Contains(out, "TCP Probes: eBPF short-circuit (--tcp-mode auto)") {
		t.Errorf("probectl version does not say the short-circuit is in force:\n%s", out)
	}
	want := map[string][]string{
		"pods": {a.pod[:13], "Ready", a.name, "default"},
		"ps":   {a.ctr[:13], "Running", a.name, a.pod[:13]},
	}
	for cmd, fields := range want {
		out := crictlOn(t, d, cmd)
		for _, f := range fields {
			if !strings.Contains(out, f) {
				t.Errorf("crictl %s does not show %q:\n%s", cmd, f, out)
			}
		}
	}
	var pod struct {
		Probelet struct {
			Containers []struct {
				ID    string `json:"id"`
				Ready bool   `json:"ready"`
			} `json:"containers"`
		} `json:"probelet"`
	}
	if err := json.Unmarshal([]byte(crictlOn(t, d, "inspectp", a.pod)), &pod); err != nil {
		t.Fatalf("crictl inspectp: %v", err)
	}
	if c := pod.Probelet.Containers; len(c) != 1 || c[0].ID != a.ctr || !c[0].Ready {
		t.Errorf("crictl inspectp: probelet containers %+v; want %s ready", c, a.ctr)
	}
}

// checkInspect reads the probe state from crictl inspect's verbose info.
func checkInspect(t *testing.T, d *daemon, a app, ready bool, output string) {
	t.Helper()
	var v struct {
		Probelet struct {
			Ready  bool `json:"ready"`
			Probes map[string]struct {
				Result     string `json:"result"`
				LastOutput string `json:"lastOutput"`
				Method     string `json:"method"`
			} `json:"probes"`
		} `json:"probelet"`
		Status struct {
			State string `json:"state"`
		} `json:"status"`
	}
	if err := json.Unmarshal([]byte(crictlOn(t, d, "inspect", a.ctr)), &v); err != nil {
		t.Fatalf("crictl inspect: %v", err)
	}
	p := v.Probelet
	r, l := p.Probes["readiness"], p.Probes["liveness"]
	want := map[bool]string{true: "Success", false: "Failure"}[ready]
	if p.Ready != ready || r.Result != want || r.LastOutput != output || r.Method != "http" {
		t.Errorf("crictl inspect: ready %v, readiness %+v; want ready %v, %s with %q by http", p.Ready, r, ready, want, output)
	}
	if l.Result != "Success" || l.Method != "ebpf" || v.Status.State != testbed.StateRunning {
		t.Errorf("crictl inspect: liveness %+v, state %s; want Success by ebpf, running", l, v.Status.State)
	}
}

// checkProbectlText: the table and describe show the same state.
func checkProbectlText(t *testing.T, d *daemon, a app, ready bool, output string) {
	t.Helper()
	readiness := map[bool]string{true: "Success", false: "Failure"}[ready]
	ps := d.mustProbectl("ps")
	if !containsLine(ps, "default/"+a.name, a.name, "Running", fmt.Sprint(ready), readiness) {
		t.Errorf("probectl ps: no line for %s with ready %v, readiness %s:\n%s", a.name, ready, readiness, ps)
	}
	desc := d.mustProbectl("describe", a.name)
	for _, want := range []string{"Ready:           " + fmt.Sprint(ready), "Readiness:       http-get", "Last output:   " + output, "Liveness:        tcp-socket :8080"} {
		if !strings.Contains(desc, want) {
			t.Errorf("probectl describe does not show %q:\n%s", want, desc)
		}
	}
}

func checkWhy(t *testing.T, d *daemon, a app, wants ...string) {
	t.Helper()
	out := d.mustProbectl("why", "default/"+a.name)
	for _, w := range wants {
		if !strings.Contains(out, w) {
			t.Errorf("probectl why does not say %q:\n%s", w, out)
		}
	}
}

// containsLine reports whether one line of out has every field.
func containsLine(out string, fields ...string) bool {
	for line := range strings.Lines(out) {
		all := true
		for _, f := range fields {
			all = all && strings.Contains(line, f)
		}
		if all {
			return true
		}
	}
	return false
}

// checkCrictlEvents: crictl events streams a container started meanwhile.
func checkCrictlEvents(t *testing.T, d *daemon, bed *testbed.Bed, a app) {
	t.Helper()
	cmd := exec.Command(d.bed.CrictlPath(), "--runtime-endpoint", d.socket, "events")
	var out syncBuffer
	cmd.Stdout = &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	// The stream is open once crictl is connected: a container started
	// before that is missed, so start another until one shows up.
	for attempt := 1; ; attempt++ {
		id, err := bed.StartContainer(a.pod, testbed.ContainerSpec{Name: "extra", Command: sleeper})
		if err != nil {
			t.Fatal(err)
		}
		if within(2*time.Second, func() bool { return strings.Contains(out.String(), id) }) {
			return
		}
		if attempt == 3 {
			t.Fatalf("crictl events never showed a started container:\n%s", out.String())
		}
	}
}

// checkProbectlErrors: an unknown container and a missing socket.
func checkProbectlErrors(t *testing.T, d *daemon) {
	t.Helper()
	if _, errOut, code := d.probectl("describe", "no-such-container"); code != 3 || !strings.Contains(errOut, "not found") {
		t.Errorf("probectl describe of an unknown container: exit %d, %q; want 3, not found", code, errOut)
	}
	cmd := exec.Command(bins.probectl, "--socket", "unix:///nonexistent/probelet.sock", "ps")
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 || !strings.Contains(string(out), "is probelet running?") {
		t.Errorf("probectl on a missing socket: %v: %s; want exit 1 asking whether probelet runs", err, out)
	}
}
