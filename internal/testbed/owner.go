package testbed

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
)

// ownerFile marks a bed with the test process that owns it, as
// "PID STARTTIME"; hack/testbed/gc.sh removes beds whose owner is gone
// (a test binary killed by its timeout never runs its cleanups).
const ownerFile = "owner"

func writeOwner(dir string) error {
	pid := os.Getpid()
	start, err := processStart(pid)
	if err != nil {
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
