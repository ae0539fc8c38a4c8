package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const convertFixtures = "testdata/convert/"

// convertRun is the full outcome of one `probelet convert` run.
type convertRun struct {
	code           int
	stdout, stderr string
}

func runConvertWith(t *testing.T, stdin []byte, args ...string) convertRun {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := runConvert(args, bytes.NewReader(stdin), &stdout, &stderr)
	return convertRun{code, stdout.String(), stderr.String()}
}

func (r convertRun) golden(args []string, stdinFile string) string {
	cmd := strings.Join(append([]string{"probelet convert"}, args...), " ")
	if stdinFile != "" {
		cmd += " < " + convertFixtures + stdinFile
	}
	return fmt.Sprintf("$ %s\n# exit %d\n# stdout\n%s# stderr\n%s", cmd, r.code, r.stdout, r.stderr)
}

// convertCases are the golden cases: every kind, both formats, comments,
// merging, idempotence, the errors and the flags.
var convertCases = []struct {
	name  string
	args  []string
	stdin string // fixture fed on stdin
}{
	{"pod", []string{convertFixtures + "pod.yaml"}, ""},
	{"pod-json", []string{convertFixtures + "pod.json"}, ""},
	{"deployment", []string{convertFixtures + "deployment.yaml"}, ""},
	{"statefulset", []string{convertFixtures + "statefulset.yaml"}, ""},
	{"daemonset", []string{convertFixtures + "daemonset.yaml"}, ""},
	{"replicaset", []string{convertFixtures + "replicaset.yaml"}, ""},
	{"job", []string{convertFixtures + "job.yaml"}, ""},
	{"cronjob", []string{convertFixtures + "cronjob.yaml"}, ""},
	{"podtemplate", []string{convertFixtures + "podtemplate.yaml"}, ""},
	{"list-json", []string{convertFixtures + "list.json"}, ""},
	{"multi-document", []string{convertFixtures + "multi.yaml"}, ""},
	{"merge", []string{convertFixtures + "merge.yaml"}, ""},
	{"converted", []string{convertFixtures + "converted.yaml"}, ""},
	{"no-probes", []string{convertFixtures + "no-probes.yaml"}, ""},
	{"stdin", nil, "deployment.yaml"},
	{"stdin-dash", []string{"-"}, "cronjob.yaml"},
	{"diff", []string{"--diff", convertFixtures + "pod.yaml"}, ""},
	{"diff-converted", []string{"--diff", convertFixtures + "converted.yaml"}, ""},
	{"two-files", []string{convertFixtures + "job.yaml", convertFixtures + "pod.json"}, ""},
	{"init-container-probe", []string{convertFixtures + "init-probe.yaml"}, ""},
	{"conflict", []string{convertFixtures + "conflict.yaml"}, ""},
	{"bad-fields", []string{convertFixtures + "bad-fields.yaml"}, ""},
	{"broken", []string{convertFixtures + "broken.yaml"}, ""},
	{"error-and-good-file", []string{convertFixtures + "conflict.yaml", convertFixtures + "job.yaml"}, ""},
	{"missing-file", []string{convertFixtures + "nosuch.yaml"}, ""},
	{"diff-and-write", []string{"--diff", "--write", convertFixtures + "pod.yaml"}, ""},
	{"write-stdin", []string{"--write"}, ""},
	{"help", []string{"--help"}, ""},
}

func TestConvertCommand_Golden(t *testing.T) {
	for _, tc := range convertCases {
		t.Run(tc.name, func(t *testing.T) {
			got := runConvertWith(t, fixture(t, tc.stdin), tc.args...).golden(tc.args, tc.stdin)
			checkGolden(t, filepath.Join(convertFixtures, tc.name+".golden"), got)
		})
	}
}

func fixture(t *testing.T, name string) []byte {
	t.Helper()
	if name == "" {
		return nil
	}
	data, err := os.ReadFile(convertFixtures + name)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// convertible are the fixtures that convert without error.
var convertible = []string{"pod.yaml", "pod.json", "deployment.yaml", "statefulset.yaml", "daemonset.yaml",
	"replicaset.yaml", "job.yaml", "cronjob.yaml", "podtemplate.yaml", "list.json", "multi.yaml", "merge.yaml",
	"converted.yaml", "no-probes.yaml"}

// TestConvertCommand_Idempotent: converting the output again changes
// nothing, byte for byte, and --diff of it is empty.
func TestConvertCommand_Idempotent(t *testing.T) {
	for _, name := range convertible {
		t.Run(name, func(t *testing.T) {
			first := runConvertWith(t, fixture(t, name))
			if first.code != convertOK {
				t.Fatalf("exit %d: %s", first.code, first.stderr)
			}
			again := runConvertWith(t, []byte(first.stdout))
			if again.code != convertOK || again.stdout != first.stdout {
				t.Errorf("second conversion changed the output (exit %d):\n--- first\n%s--- second\n%s", again.code, first.stdout, again.stdout)
			}
			if d := runConvertWith(t, []byte(first.stdout), "--diff"); d.stdout != "" {
				t.Errorf("--diff of the output is not empty:\n%s", d.stdout)
			}
		})
	}
}

// TestConvertCommand_OutputValidates: what convert writes passes `probelet
// validate` (spec.Check on every pod that has probes).
func TestConvertCommand_OutputValidates(t *testing.T) {
	for _, name := range convertible {
		if name == "no-probes.yaml" {
			continue // nothing to validate: no pod uses probelet
		}
		t.Run(name, func(t *testing.T) {
			out := runConvertWith(t, fixture(t, name))
			var stdout, stderr bytes.Buffer
			if code := runValidate(nil, strings.NewReader(out.stdout), &stdout, &stderr); code != validateOK || stderr.Len() > 0 {
				t.Errorf("probelet validate: exit %d\n%s\n%s", code, stderr.String(), out.stdout)
			}
		})
	}
}

// TestConvertCommand_Write rewrites a directory of manifests in place: the
// files become what convert prints, keep their modes, files without a
// change and files of other types are not touched, and a second run
// writes nothing.
func TestConvertCommand_Write(t *testing.T) {
	dir := t.TempDir()
	files := map[string]os.FileMode{"pod.yaml": 0o600, "nested/list.json": 0o644, "no-probes.yaml": 0o644}
	for name, mode := range files {
		path := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, fixture(t, filepath.Base(name)), mode); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "README.md"), []byte("livenessProbe:\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r := runConvertWith(t, nil, "--write", dir)
	if r.code != convertOK || r.stdout != "" || strings.Count(r.stderr, "converted ") != 2 {
		t.Fatalf("exit %d\nstdout %q\nstderr %q", r.code, r.stdout, r.stderr)
	}
	for name, mode := range files {
		path := filepath.Join(dir, name)
		got, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if want := runConvertWith(t, fixture(t, filepath.Base(name))).stdout; string(got) != want {
			t.Errorf("%s:\n%s\nwant\n%s", name, got, want)
		}
		if st, _ := os.Stat(path); st.Mode().Perm() != mode {
			t.Errorf("%s: mode %v, want %v", name, st.Mode().Perm(), mode)
		}
	}
	if again := runConvertWith(t, nil, "--write", dir); again.code != convertOK || again.stderr != "" {
		t.Errorf("second --write: exit %d, stderr %q", again.code, again.stderr)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 4 {
		t.Errorf("the directory holds %d entries, want 4 (no temporary files left)", len(entries))
	}
}
