//go:build e2e

package e2e_test

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
)

// bins are the binaries under test, built once by TestMain. The direct
// exec helper sits next to probelet, where probelet looks for it.
var bins struct {
	probelet, probectl, controller, execHelper string
	kubectlProbelet                            string
	// dir holds them, and whatever else is built once per test binary.
	dir string
}

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	dir, err := os.MkdirTemp("", "probelet-e2e-bin")
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		return 1
	}
	defer os.RemoveAll(dir)
	bins.dir = dir
	bins.probelet = filepath.Join(dir, "probelet")
	bins.probectl = filepath.Join(dir, "probectl")
	bins.controller = filepath.Join(dir, "probelet-controller")
	bins.kubectlProbelet = filepath.Join(dir, "kubectl-probelet")
	for out, pkg := range map[string]string{bins.probelet: "./cmd/probelet", bins.probectl: "./cmd/probectl",
		bins.controller: "./cmd/probelet-controller", bins.kubectlProbelet: "./cmd/probectl/kubectl-probelet"} {
		if err := goBuild(out, pkg); err != nil {
			fmt.Fprintln(os.Stderr, "e2e:", err)
			return 1
		}
	}
	bins.execHelper = filepath.Join(dir, "probelet-exec")
	if err := buildExecHelper(bins.execHelper); err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		return 1
	}
	return m.Run()
}

// buildExecHelper builds the direct exec helper as `make build` does.
func buildExecHelper(out string) error {
	cmd := exec.Command(filepath.Join(repoRoot(), "hack", "build-exec-helper.sh"), out)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("hack/build-exec-helper.sh: %w\n%s", err, stderr.String())
	}
	return nil
}

// goBuild builds pkg of this module into out, as `make build` does (its
// BUILDTAGS too).
func goBuild(out, pkg string) error {
	cmd := exec.Command("go", "build", "-trimpath", "-tags", "grpcnotrace", "-o", out, pkg)
	cmd.Dir = repoRoot()
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("go build %s: %w\n%s", pkg, err, stderr.String())
	}
	return nil
}

// repoRoot is the module root, one level above this file.
func repoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Dir(filepath.Dir(file))
}
