//go:build e2e

package e2e_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// ctrView is one item of `probectl ps -o json`: the fields DESIGN.md
// promises, decoded strictly from the real output.
type ctrView struct {
	ContainerID    string               `json:"containerId"`
	PodName        string               `json:"podName"`
	PodNamespace   string               `json:"podNamespace"`
	ContainerName  string               `json:"containerName"`
	State          string               `json:"state"`
	Started        bool                 `json:"started"`
	Ready          bool                 `json:"ready"`
	SpecError      string               `json:"specError"`
	RestartsIssued int                  `json:"restartsIssued"`
	Probes         map[string]probeView `json:"probes"`
}

// probeView is one entry of probes, keyed liveness, readiness or startup.
type probeView struct {
	Result        string     `json:"result"`
	Consecutive   int        `json:"consecutive"`
	LastProbeTime *time.Time `json:"lastProbeTime"`
	LastOutput    string     `json:"lastOutput"`
	Method        string     `json:"method"`
	Origin        string     `json:"origin"`
	OnHold        bool       `json:"onHold"`
	KillDeferred  string     `json:"killDeferred"`
	History       []runView  `json:"history"` // describe only
}

// runView is one recent run in `probectl describe -o json`.
type runView struct {
	Time     time.Time `json:"time"`
	Result   string    `json:"result"`
	Duration string    `json:"duration"` // Go's notation
	Output   string    `json:"output"`
	Method   string    `json:"method"`
	Error    string    `json:"error"`
}

// detailView is `probectl describe -o json`.
type detailView struct {
	ctrView
	Restarts []restartView `json:"restarts"`
}

type restartView struct {
	Time        time.Time `json:"time"`
	ContainerID string    `json:"containerId"`
	Probe       string    `json:"probe"`
	GracePeriod string    `json:"gracePeriod"`
	Message     string    `json:"message"`
	Error       string    `json:"error"`
}

// probectl runs the probectl binary against the daemon's socket and
// returns its stdout, stderr and exit code.
func (d *daemon) probectl(args ...string) (stdout, stderr string, code int) {
	d.t.Helper()
	cmd := exec.Command(bins.probectl, append([]string{"--socket", d.socket}, args...)...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		code = ee.ExitCode()
	case err != nil:
		d.t.Fatalf("probectl %s: %v", strings.Join(args, " "), err)
	}
	return out.String(), errOut.String(), code
}

// mustProbectl runs probectl and fails the test unless it exits 0.
func (d *daemon) mustProbectl(args ...string) string {
	d.t.Helper()
	out, errOut, code := d.probectl(args...)
	if code != 0 {
		d.t.Fatalf("probectl %s: exit %d: %s", strings.Join(args, " "), code, errOut)
	}
	return out
}

// ps is `probectl ps -o json`.
func (d *daemon) ps() []ctrView {
	d.t.Helper()
	v, err := d.tryPS()
	if err != nil {
		d.t.Fatal(err)
	}
	return v
}

// tryPS is ps for goroutines other than the test's: it never fails the test.
func (d *daemon) tryPS() ([]ctrView, error) {
	cmd := exec.Command(bins.probectl, "--socket", d.socket, "ps", "-o", "json")
	var errOut bytes.Buffer
	cmd.Stderr = &errOut
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("probectl ps -o json: %w: %s", err, errOut.String())
	}
	var v []ctrView
	if err := json.Unmarshal(out, &v); err != nil {
		return nil, fmt.Errorf("probectl ps -o json: %w\n%s", err, out)
	}
	return v, nil
}

// ctr is the container's item of `probectl ps -o json`, ok false if absent.
func (d *daemon) ctr(id string) (ctrView, bool) {
	d.t.Helper()
	for _, c := range d.ps() {
		if c.ContainerID == id {
			return c, true
		}
	}
	return ctrView{}, false
}

// describe is `probectl describe -o json ID`.
func (d *daemon) describe(id string) detailView {
	d.t.Helper()
	var v detailView
	decodeJSON(d.t, d.mustProbectl("describe", "-o", "json", id), &v)
	return v
}

// decodeJSON decodes JSON into v; fields v does not name are allowed
// (the contract is additive), malformed output is not.
func decodeJSON(t *testing.T, out string, v any) {
	t.Helper()
	if err := json.Unmarshal([]byte(out), v); err != nil {
		t.Fatalf("output is not the expected JSON: %v\n%s", err, out)
	}
}
