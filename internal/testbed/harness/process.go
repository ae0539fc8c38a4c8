package harness

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// pollEvery is how often WaitGone looks: the processes are not our
// children, so there is nothing to wait on.
const pollEvery = 20 * time.Millisecond

// ErrNotRunning is returned by RunningPID when the process is not running.
var ErrNotRunning = errors.New("not running")

// Alive reports whether pid runs. A zombie has exited already (the PID 1
// of some machines reaps orphans late); hack/lib/proc.sh's alive is the
// same rule.
func Alive(pid int) bool {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	i := bytes.LastIndexByte(stat, ')')
	return i < 0 || !bytes.HasPrefix(stat[i+1:], []byte(" Z"))
}

// WaitGone polls until pid has exited, and reports whether it did within
// limit.
func WaitGone(pid int, limit time.Duration) bool {
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		if !Alive(pid) {
			return true
		}
		time.Sleep(pollEvery)
	}
	return false
}

// ReadPID reads a PID file the scripts wrote.
func ReadPID(pidFile string) (int, error) {
	data, err := os.ReadFile(pidFile)
	if err != nil {
		return 0, err
	}
	return parsePID(pidFile, data)
}

// RunningPID returns the PID in pidFile when that process is alive and,
// unless arg is "", has arg as one of its arguments, so a reused PID is not
// taken for ours (hack/lib/proc.sh's pid_of is the same rule). Otherwise it
// returns ErrNotRunning, or why the PID file cannot be read as one.
func RunningPID(pidFile, arg string) (int, error) {
	data, err := os.ReadFile(pidFile)
	if err != nil {
		return 0, ErrNotRunning
	}
	pid, err := parsePID(pidFile, data)
	if err != nil {
		return 0, err
	}
	if !Alive(pid) {
		return 0, ErrNotRunning
	}
	if arg != "" {
		cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		if err != nil || !hasArg(cmdline, arg) {
			return 0, ErrNotRunning
		}
	}
	return pid, nil
}

func parsePID(pidFile string, data []byte) (int, error) {
	pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil {
		return 0, fmt.Errorf("bad %s: %w", filepath.Base(pidFile), err)
	}
	return pid, nil
}

// hasArg reports whether a NUL-separated command line has arg as one
// whole argument.
func hasArg(cmdline []byte, arg string) bool {
	for _, a := range bytes.Split(cmdline, []byte{0}) {
		if string(a) == arg {
			return true
		}
	}
	return false
}
