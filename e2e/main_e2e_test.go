//go:build e2e

package e2e_test

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
)

// bins are the binaries under test, built once by TestMain.
var bins struct {
	probelet, probectl string
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
	bins.probelet = filepath.Join(dir, "probelet")
	bins.probectl = filepath.Join(dir, "probectl")
	for out, pkg := range map[string]string{bins.probelet: "./cmd/probelet", bins.probectl: "./cmd/probectl"} {
		if err := goBuild(out, pkg); err != nil {
			fmt.Fprintln(os.Stderr, "e2e:", err)
			return 1
		}
	}
	return m.Run()
}

// goBuild builds pkg of this module into out, as `make build` does.
func goBuild(out, pkg string) error {
	cmd := exec.Command("go", "build", "-trimpath", "-o", out, pkg)
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

var crictlPath = sync.OnceValues(func() (string, error) {
	out, err := exec.Command(filepath.Join(repoRoot(), "hack", "testbed", "build.sh")).Output()
	if err != nil {
		return "", fmt.Errorf("hack/testbed/build.sh: %w", err)
	}
	for line := range strings.Lines(string(out)) {
		if p, ok := strings.CutPrefix(strings.TrimSpace(line), "crictl="); ok {
			return p, nil
		}
	}
	return "", fmt.Errorf("hack/testbed/build.sh printed no crictl=PATH:\n%s", out)
})

// crictl returns the test bed's crictl binary (built by hack/testbed).
func crictl(t *testing.T) string {
	t.Helper()
	p, err := crictlPath()
	if err != nil {
		t.Fatal(err)
	}
	return p
}
