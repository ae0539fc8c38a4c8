package testbed

import "github.com/probelet/probelet/internal/testbed/harness"

// MarkOwned writes the empty file marker and the owner file ("PID
// STARTTIME" of this process) into dir, so a gc.sh can tell a directory
// whose test process is gone, for programs that start beds by hand (the
// node bench); it is harness.MarkOwned.
func MarkOwned(dir, marker string) error { return harness.MarkOwned(dir, marker) }
