package testbed

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
)

const (
	// bedMarker marks a directory as a test bed; the scripts refuse to
	// start in or delete a non-empty directory without it.
	bedMarker = ".probelet-testbed"
	// ownerFile names the test process that owns the bed, as
	// "PID STARTTIME"; hack/testbed/gc.sh removes beds whose owner is gone
	// (a test binary killed by its timeout never runs its cleanups).
	ownerFile = "owner"
)

// markBed writes the marker and the owner file into a new bed directory.
func markBed(dir string) error { return MarkOwned(dir, bedMarker) }

// MarkOwned writes the empty file marker and the owner file ("PID
// STARTTIME" of this process) into dir, so a gc script can tell a directory
// whose test process is gone; internal/cluster marks its directories so.
func MarkOwned(dir, marker string) error {
	pid := os.Getpid()
	start, err := processStart(pid)
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, marker), nil, 0o644); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, ownerFile), fmt.Appendf(nil, "%d %s\n", pid, start), 0o644)
}

// processStart returns field 22 of /proc/PID/stat, the start time in clock
// ticks since boot, which tells a reused PID from the original.
func processStart(pid int) (string, error) {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return "", err
	}
	i := bytes.LastIndexByte(stat, ')')
	fields := bytes.Fields(stat[i+1:]) // from field 3, the state
	if i < 0 || len(fields) < 20 {
		return "", fmt.Errorf("testbed: cannot parse /proc/%d/stat", pid)
	}
	return string(fields[19]), nil
}
