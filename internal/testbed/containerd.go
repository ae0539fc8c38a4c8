package testbed

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

const (
	restartTimeout = 2 * time.Minute
	stopGrace      = 15 * time.Second
	pollEvery      = 20 * time.Millisecond
)

// ErrContainerdNotRunning is returned by ContainerdPID when this bed's
// containerd is not running.
var ErrContainerdNotRunning = errors.New("testbed: containerd is not running")

// ContainerdPID returns the PID of this bed's containerd. A PID whose
// command line does not name this bed's config is not ours.
func (b *Bed) ContainerdPID() (int, error) {
	data, err := os.ReadFile(filepath.Join(b.dir, "containerd.pid"))
	if err != nil {
		return 0, ErrContainerdNotRunning
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil {
		return 0, fmt.Errorf("testbed: bad containerd.pid: %w", err)
	}
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil || !alive(pid) || !hasArg(cmdline, filepath.Join(b.dir, "config.toml")) {
		return 0, ErrContainerdNotRunning
	}
	return pid, nil
}

func hasArg(cmdline []byte, arg string) bool {
	for _, a := range bytes.Split(cmdline, []byte{0}) {
		if string(a) == arg {
			return true
		}
	}
	return false
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
	if waitGone(pid, stopGrace) {
		return nil
	}
	b.t.Logf("testbed: containerd %d still running %v after %v; killing it", pid, stopGrace, sig)
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
		return err
	}
	if !waitGone(pid, stopGrace) {
		return fmt.Errorf("testbed: containerd %d survived SIGKILL", pid)
	}
	return nil
}

// waitGone polls until pid has exited; containerd is not our child, so
// there is nothing to wait on.
func waitGone(pid int, limit time.Duration) bool {
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		if !alive(pid) {
			return true
		}
		time.Sleep(pollEvery)
	}
	return false
}

// Alive reports whether pid runs with the bed's notion of a running
// process: a zombie has exited already (the PID 1 of some machines reaps
// orphans late). Tests use it to check for leftover processes, and
// internal/cluster for its components.
func Alive(pid int) bool { return alive(pid) }

func alive(pid int) bool {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	i := bytes.LastIndexByte(stat, ')')
	return i < 0 || !bytes.HasPrefix(stat[i+1:], []byte(" Z"))
}

// StartContainerd starts this bed's containerd again with the same
// directories and configuration, and waits until CRI is ready. A running
// containerd is left alone.
func (b *Bed) StartContainerd() error {
	_, err := b.script(restartTimeout, "up.sh", b.dir)
	return err
}

// RestartContainerd stops containerd with SIGTERM and starts it again.
func (b *Bed) RestartContainerd() error {
	if err := b.StopContainerd(syscall.SIGTERM); err != nil {
		return err
	}
	return b.StartContainerd()
}
