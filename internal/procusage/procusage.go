//go:build linux

// Package procusage reads what a process costs from outside it: its CPU
// time and resident memory. The benchmarks under hack/bench set agents
// and controllers side by side with it.
package procusage

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// CPUTime is the CPU time process pid has used: user + system time of all
// its threads, exited ones included, in nanoseconds. It reads the process's
// CPU clock from outside, through the clock ID the kernel derives from a
// PID (MAKE_PROCESS_CPUCLOCK(pid, CPUCLOCK_SCHED)); utime + stime in
// /proc/PID/stat is the same time in 10 ms ticks.
func CPUTime(pid int) (time.Duration, error) {
	var ts unix.Timespec
	clock := int32(^pid<<3 | 2)
	if err := unix.ClockGettime(clock, &ts); err != nil {
		return 0, fmt.Errorf("CPU clock of pid %d: %w", pid, err)
	}
	return time.Duration(ts.Nano()), nil
}

// RSS is VmRSS of process pid, in bytes.
func RSS(pid int) (int64, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return kb << 10, err
		}
	}
	return 0, fmt.Errorf("/proc/%d/status has no VmRSS", pid)
}
