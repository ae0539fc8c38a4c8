package testbed

import (
	"errors"
	"fmt"
	"path/filepath"
	"syscall"
	"time"

	"github.com/probelet/probelet/internal/testbed/harness"
)

const (
	restartTimeout = 2 * time.Minute
	stopGrace      = 15 * time.Second
)

// The runtimes a bed can run.
const (
	Containerd = "containerd"
	CRIO       = "crio"
)

// ErrRuntimeNotRunning is returned by RuntimePID when this bed's runtime
// (containerd or CRI-O) is not running.
var ErrRuntimeNotRunning = errors.New("testbed: the runtime is not running")

// RuntimePID returns the PID of this bed's runtime. A PID whose command
// line does not name this bed's config is not ours.
func (b *Bed) RuntimePID() (int, error) {
	config := "config.toml"
	if b.runtime == CRIO {
		config = "crio.conf"
	}
	pid, err := harness.RunningPID(filepath.Join(b.Dir(), b.runtime+".pid"), filepath.Join(b.Dir(), config))
	if errors.Is(err, harness.ErrNotRunning) {
		return 0, ErrRuntimeNotRunning
	}
	return pid, err
}

// StopRuntime sends sig to this bed's runtime and waits until it has
// exited (SIGKILL after 15 s). Shims (conmons) and containers keep running,
// as on a real node; use syscall.SIGKILL to simulate a crash.
func (b *Bed) StopRuntime(sig syscall.Signal) error {
	pid, err := b.RuntimePID()
	if err != nil {
		return err
	}
	if err := syscall.Kill(pid, sig); err != nil {
		return fmt.Errorf("testbed: signal %s %d: %w", b.runtime, pid, err)
	}
	if harness.WaitGone(pid, stopGrace) {
		return nil
	}
	b.t.Logf("testbed: %s %d still running %v after %v; killing it", b.runtime, pid, stopGrace, sig)
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
		return err
	}
	if !harness.WaitGone(pid, stopGrace) {
		return fmt.Errorf("testbed: %s %d survived SIGKILL", b.runtime, pid)
	}
	return nil
}

// Alive reports whether pid runs with the bed's notion of a running
// process: a zombie has exited already. Tests use it to check for leftover
// processes; it is harness.Alive.
func Alive(pid int) bool { return harness.Alive(pid) }

// StartRuntime starts this bed's runtime again with the same directories
// and configuration, and waits until CRI is ready. A running one is left
// alone.
func (b *Bed) StartRuntime() error {
	_, err := b.scripts.Run(restartTimeout, "up.sh", b.Dir())
	return err
}

// RestartRuntime stops the runtime with SIGTERM and starts it again.
func (b *Bed) RestartRuntime() error {
	if err := b.StopRuntime(syscall.SIGTERM); err != nil {
		return err
	}
	return b.StartRuntime()
}
