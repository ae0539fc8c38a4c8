package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/probelet/probelet/internal/testutil/golden"
	"github.com/probelet/probelet/probespec"
)

const fixtures = "testdata/validate/"

// validateRun is the full outcome of one `probelet validate` run.
type validateRun struct {
	code           int
	stdout, stderr string
}

func runValidateWith(t *testing.T, stdinFile string, args ...string) validateRun {
	t.Helper()
	stdin := []byte{}
	if stdinFile != "" {
		var err error
		if stdin, err = os.ReadFile(fixtures + stdinFile); err != nil {
			t.Fatal(err)
		}
	}
	var stdout, stderr bytes.Buffer
	code := runValidate(args, bytes.NewReader(stdin), &stdout, &stderr)
	return validateRun{code, stdout.String(), stderr.String()}
}

// golden renders a run the way the .golden files hold it.
func (r validateRun) golden(args []string, stdinFile string) string {
	cmd := strings.Join(append([]string{"probelet validate"}, args...), " ")
	if stdinFile != "" {
		cmd += " < " + fixtures + stdinFile
	}
	return fmt.Sprintf("$ %s\n# exit %d\n# stdout\n%s# stderr\n%s", cmd, r.code, r.stdout, r.stderr)
}

func TestValidateCommand_Golden(t *testing.T) {
	tests := []struct {
		name  string
		args  []string
		stdin string // fixture fed on stdin
	}{
		{"pod-valid", []string{fixtures + "pod-valid.yaml"}, ""},
		{"pod-valid-json", []string{"-o", "json", fixtures + "pod-valid.yaml"}, ""},
		{"pod-invalid", []string{fixtures + "pod-invalid.yaml"}, ""},
		{"pod-invalid-json", []string{"-o=json", fixtures + "pod-invalid.yaml"}, ""},
		{"pod-probe-host", []string{fixtures + "pod-probe-host.yaml"}, ""},
		{"pod-probe-origin", []string{fixtures + "pod-probe-origin.yaml"}, ""},
		{"pod-json-manifest", []string{fixtures + "pod.json"}, ""},
		{"pod-no-annotation", []string{fixtures + "pod-no-annotation.yaml"}, ""},
		{"annotation-stdin", nil, "annotation.json"},
		{"pod-stdin", []string{"-"}, "pod-valid.yaml"},
		{"annotation-dash-json", []string{"-o", "json", "-"}, "annotation.json"},
		{"annotation-yaml", []string{fixtures + "annotation.yaml"}, ""},
		{"annotation-named-pod", []string{"-pod", "db/postgres-0", fixtures + "annotation.yaml"}, ""},
		{"annotation-named-pod-pflag", []string{"--pod=db/postgres-0", "--output", "json", fixtures + "annotation.yaml"}, ""},
		{"old-spelling-long-o", []string{"--o", "json", "-pod=db/postgres-0", fixtures + "annotation.yaml"}, ""},
		{"annotation-invalid", []string{fixtures + "annotation-invalid.json"}, ""},
		{"annotation-invalid-json", []string{"-o", "json", fixtures + "annotation-invalid.json"}, ""},
		{"annotation-syntax", []string{fixtures + "annotation-syntax.json"}, ""},
		{"deployment", []string{fixtures + "deployment.yaml"}, ""},
		{"deployment-misplaced", []string{fixtures + "deployment-misplaced.yaml"}, ""},
		{"multi-document", []string{fixtures + "multi.yaml"}, ""},
		{"multi-document-json", []string{"-o", "json", fixtures + "multi.yaml"}, ""},
		{"manifest-broken", []string{fixtures + "manifest-broken.yaml"}, ""},
		{"manifest-bad-field-type", []string{fixtures + "manifest-bad-field-type.yaml"}, ""},
		{"no-pod-in-input", []string{fixtures + "configmap.yaml"}, ""},
		{"missing-file", []string{fixtures + "nosuch.yaml"}, ""},
		{"bad-output-format", []string{"-o", "yaml", fixtures + "pod-valid.yaml"}, ""},
		{"two-files", []string{fixtures + "pod-valid.yaml", fixtures + "pod.json"}, ""},
		{"unknown-flag", []string{"--strict", fixtures + "pod-valid.yaml"}, ""},
		{"help", []string{"-h"}, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := runValidateWith(t, tc.stdin, tc.args...).golden(tc.args, tc.stdin)
			checkGolden(t, filepath.Join(fixtures, tc.name+".golden"), got)
		})
	}
}

func TestValidateCommand_ExitStatus(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want int
	}{
		{"valid pod", []string{fixtures + "pod-valid.yaml"}, validateOK},
		{"valid workloads", []string{fixtures + "multi.yaml"}, validateOK},
		{"invalid probe", []string{fixtures + "annotation-invalid.json"}, validateInvalid},
		{"container missing from the pod", []string{fixtures + "pod-invalid.yaml"}, validateInvalid},
		{"misplaced annotation", []string{fixtures + "deployment-misplaced.yaml"}, validateInvalid},
		{"unreadable manifest", []string{fixtures + "manifest-broken.yaml"}, validateInvalid},
		{"missing file", []string{fixtures + "nosuch.yaml"}, validateUsage},
		{"bad flag", []string{"-x"}, validateUsage},
		{"nothing to check", []string{fixtures + "configmap.yaml"}, validateUsage},
		{"help", []string{"-help"}, validateOK},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if r := runValidateWith(t, "", tc.args...); r.code != tc.want {
				t.Errorf("exit %d, want %d\nstderr: %s", r.code, tc.want, r.stderr)
			}
		})
	}
}

func TestValidateCommand_EveryErrorOnStderrNamingPodAndContainer(t *testing.T) {
	r := runValidateWith(t, "", fixtures+"pod-invalid.yaml")
	lines := strings.Split(strings.TrimSpace(r.stderr), "\n")
	want := []string{
		`pod shop/cart-0: container "ghost": spec.containers: Not found`,
		`pod shop/cart-0: container "metrics": livenessProbe.httpGet.port: Invalid value: "metrics": port "metrics" not found`,
		`pod shop/cart-0: container "worker": livenessProbe.perodSeconds: Forbidden: unknown field`,
		`pod shop/cart-0: container "worker": livenessProbe.successThreshold: Invalid value: 3: must be 1`,
	}
	if len(lines) != len(want) {
		t.Fatalf("stderr has %d lines, want %d:\n%s", len(lines), len(want), r.stderr)
	}
	for _, w := range want {
		if !containsLine(lines, w) {
			t.Errorf("no stderr line starts with %q:\n%s", w, r.stderr)
		}
	}
}

func containsLine(lines []string, prefix string) bool {
	for _, l := range lines {
		if strings.HasPrefix(l, prefix) {
			return true
		}
	}
	return false
}

func TestValidateCommand_JSONIsStable(t *testing.T) {
	r := runValidateWith(t, "", "-o", "json", fixtures+"pod-invalid.yaml")
	var out struct {
		Pod        string              `json:"pod"`
		Containers probespec.PodProbes `json:"containers"`
		Errors     []string            `json:"errors"`
		Warnings   []string            `json:"warnings"`
	}
	dec := json.NewDecoder(strings.NewReader(r.stdout))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&out); err != nil {
		t.Fatalf("stdout is not the documented object: %v\n%s", err, r.stdout)
	}
	if out.Pod != "shop/cart-0" || len(out.Containers) != 1 || out.Containers["app"].Readiness == nil ||
		len(out.Errors) != 4 || out.Warnings == nil {
		t.Errorf("unexpected report: %+v", out)
	}
	again := runValidateWith(t, "", "-o", "json", fixtures+"pod-invalid.yaml")
	if again.stdout != r.stdout {
		t.Error("two runs printed different JSON")
	}
}

func TestValidateCommand_ValidContainersPrintedDespiteErrors(t *testing.T) {
	r := runValidateWith(t, "", "-o", "json", fixtures+"annotation-invalid.json")
	var out struct {
		Containers probespec.PodProbes `json:"containers"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &out); err != nil {
		t.Fatal(err)
	}
	ok, found := out.Containers["ok"]
	if r.code != validateInvalid || !found || ok.Startup == nil || ok.Startup.PeriodSeconds != 10 {
		t.Errorf("exit %d, containers %+v", r.code, out.Containers)
	}
	if _, bad := out.Containers["web"]; bad {
		t.Error("invalid container web printed as valid")
	}
}

// checkGolden compares got with the golden file at path (golden.Check).
func checkGolden(t *testing.T, path, got string) {
	t.Helper()
	golden.Check(t, path, []byte(got))
}
