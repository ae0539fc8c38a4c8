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

// ErrContainerdNotRunning is returned by ContainerdPID when this bed's
// containerd is not running.
var ErrContainerdNotRunning = errors.New("testbed: containerd is not running")

// ContainerdPID returns the PID of this bed's containerd. A PID whose
// command line does not name this bed's config is not ours.
func (b *Bed) ContainerdPID() (int, error) {
	pid, err := harness.RunningPID(filepath.Join(b.Dir(), "containerd.pid"), filepath.Join(b.Dir(), "config.toml"))
	if errors.Is(err, harness.ErrNotRunning) {
		return 0, ErrContainerdNotRunning
	}
	return pid, err
}

// StopContainerd sends sig to this bed's containerd and waits until it has
// exited (SIGKILL after 15 s). Shims and containers keep running, as on a
// real node; use syscall.SIGKILL to simulate a crash.
func (b *Bed) StopContainerd(sig syscall.Signal) error {
	pid, err := b.ContainerdPID()
	if err != nil {
		return err
	}
	if err := syscall.Kill(pid, sig); err != nil {
		return fmt.Errorf("testbed: signal containerd %d: %w", pid, err)
	}
	if harness.WaitGone(pid, stopGrace) {
		return nil
	}
	b.t.Logf("testbed: containerd %d still running %v after %v; killing it", pid, stopGrace, sig)
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
		return err
	}
	if !harness.WaitGone(pid, stopGrace) {
		return fmt.Errorf("testbed: containerd %d survived SIGKILL", pid)
	}
	return nil
}

// Alive reports whether pid runs with the bed's notion of a running
// process: a zombie has exited already. Tests use it to check for leftover
// processes; it is harness.Alive.
func Alive(pid int) bool { return harness.Alive(pid) }

// StartContainerd starts this bed's containerd again with the same
// directories and configuration, and waits until CRI is ready. A running
// containerd is left alone.
func (b *Bed) StartContainerd() error {
	_, err := b.scripts.Run(restartTimeout, "up.sh", b.Dir())
	return err
}

// RestartContainerd stops containerd with SIGTERM and starts it again.
func (b *Bed) RestartContainerd() error {
	if err := b.StopContainerd(syscall.SIGTERM); err != nil {
		return err
	}
	return b.StartContainerd()
}
