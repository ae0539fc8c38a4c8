package harness

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// defaultCache is where the scripts build and keep their binaries, one
// directory per component and version (hack/lib/cache.sh).
const defaultCache = "/var/cache/probelet-testbed"

// CacheDir is the build cache the scripts use unless told otherwise:
// $PROBELET_TESTBED_CACHE, else /var/cache/probelet-testbed.
func CacheDir() string {
	if c := os.Getenv("PROBELET_TESTBED_CACHE"); c != "" {
		return c
	}
	return defaultCache
}

// Scripts runs the scripts of one hack/ directory (hack/testbed,
// hack/cluster) with the shared build cache.
type Scripts struct {
	// Name is the directory under hack/, and prefixes messages.
	Name string
	// Dir is where the scripts are; Locate finds it when it is "".
	Dir string
	// CacheDir is the build cache, passed as PROBELET_TESTBED_CACHE.
	CacheDir string
	// StartTimeout bounds build.sh and the scripts that start things,
	// including a cold build.
	StartTimeout time.Duration
	// Env is added to every script's environment (KEY=VALUE).
	Env []string
}

// NewScripts is hack/name's scripts with the default cache (CacheDir).
func NewScripts(name string, startTimeout time.Duration) Scripts {
	return Scripts{Name: name, CacheDir: CacheDir(), StartTimeout: startTimeout}
}

// SetCacheDir sets the build cache, which must be absolute.
func (s *Scripts) SetCacheDir(dir string) error {
	if !filepath.IsAbs(dir) {
		return fmt.Errorf("%s: cache dir must be absolute, got %s", s.Name, dir)
	}
	s.CacheDir = dir
	return nil
}

// SetDir sets where the scripts are.
func (s *Scripts) SetDir(dir string) error {
	if dir == "" {
		return fmt.Errorf("%s: empty scripts dir", s.Name)
	}
	s.Dir = dir
	return nil
}

// SetStartTimeout sets StartTimeout, which must be positive.
func (s *Scripts) SetStartTimeout(d time.Duration) error {
	if d <= 0 {
		return fmt.Errorf("%s: start timeout must be positive", s.Name)
	}
	s.StartTimeout = d
	return nil
}

// Run runs one script and returns its stdout; the error carries the
// script's stderr, which names what went wrong.
func (s Scripts) Run(timeout time.Duration, name string, args ...string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(s.Dir, name), args...)
	cmd.Env = append(append(os.Environ(), "PROBELET_TESTBED_CACHE="+s.CacheDir), s.Env...)
	// What the scripts start logs to files, but a stray inherited pipe
	// must not hang us.
	cmd.WaitDelay = 5 * time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			err = fmt.Errorf("timed out after %v", timeout)
		}
		return stdout.Bytes(), fmt.Errorf("%s: %w\n%s", strings.Join(append([]string{name}, args...), " "), err, Tail(stderr.String(), 40))
	}
	return stdout.Bytes(), nil
}

// Build runs build.sh, which builds what the cache lacks and prints
// NAME=PATH per binary, and returns those paths; each of want must be
// among them.
func (s Scripts) Build(want ...string) (map[string]string, error) {
	out, err := s.Run(s.StartTimeout, "build.sh")
	if err != nil {
		return nil, err
	}
	bins := ParseEnv(out)
	for _, name := range want {
		if bins[name] == "" {
			return nil, fmt.Errorf("build.sh did not print %s=PATH:\n%s", name, out)
		}
	}
	return bins, nil
}
