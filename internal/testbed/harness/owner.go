package harness

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
)

// OwnerFile names, inside a directory the harness made, the test process
// that owns it, as "PID STARTTIME"; the scripts' gc.sh (hack/lib/gc.sh)
// removes a directory whose owner is gone: a test binary killed by its
// timeout never runs its cleanups.
const OwnerFile = "owner"

// MarkOwned writes the empty file marker (the scripts refuse to start in or
// delete a non-empty directory without it) and OwnerFile for this process
// into dir.
func MarkOwned(dir, marker string) error {
	pid := os.Getpid()
	start, err := processStart(pid)
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, marker), nil, 0o644); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, OwnerFile), fmt.Appendf(nil, "%d %s\n", pid, start), 0o644)
}

// disown removes OwnerFile: a directory kept for inspection is not gc.sh's
// to remove.
func disown(dir string) { _ = os.Remove(filepath.Join(dir, OwnerFile)) }

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
		return "", fmt.Errorf("harness: cannot parse /proc/%d/stat", pid)
	}
	return string(fields[19]), nil
}
