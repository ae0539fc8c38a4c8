package cluster

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"time"
)

// findScripts returns the hack/cluster directory: next to this source file
// when the build kept source paths, else the nearest one above the working
// directory.
func findScripts() (string, error) {
	if _, file, _, ok := runtime.Caller(0); ok {
		dir := filepath.Join(filepath.Dir(file), "..", "..", "hack", "cluster")
		if isScriptsDir(dir) {
			return filepath.Clean(dir), nil
		}
	}
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for dir := wd; ; dir = filepath.Dir(dir) {
		if cand := filepath.Join(dir, "hack", "cluster"); isScriptsDir(cand) {
			return cand, nil
		}
		if dir == filepath.Dir(dir) {
			return "", fmt.Errorf("cluster: hack/cluster/up.sh not found above %s", wd)
		}
	}
}

func isScriptsDir(dir string) bool {
	st, err := os.Stat(filepath.Join(dir, "up.sh"))
	return err == nil && st.Mode().IsRegular()
}

// run runs one hack/cluster script and returns its stdout; the error
// carries the script's stderr, which names what went wrong.
func (e scriptEnv) run(timeout time.Duration, name string, args ...string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(e.scripts, name), args...)
	cmd.Env = append(os.Environ(), "PROBELET_TESTBED_CACHE="+e.cacheDir)
	// The components log to files, but a stray inherited pipe must not hang us.
	cmd.WaitDelay = 5 * time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			err = fmt.Errorf("timed out after %v", timeout)
		}
		return stdout.Bytes(), fmt.Errorf("%s: %w\n%s", strings.Join(append([]string{name}, args...), " "), err, tail(stderr.String(), 40))
	}
	return stdout.Bytes(), nil
}

// tail returns the last n lines of s.
func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// fileTail returns the last n lines of a log file, or why it cannot.
func fileTail(path string, n int) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	return tail(string(data), n)
}
