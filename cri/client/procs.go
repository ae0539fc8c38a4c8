package client

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
)

// pfExiting is the kernel's PF_EXITING task flag (include/linux/sched.h),
// set as a task begins to exit. A container's init has it while the kernel
// kills the other processes of its PID namespace and waits until they are
// reaped (an exec probe's among them, whose failure probelet may read first),
// before it turns zombie and the runtime can see the exit.
const pfExiting = 0x4

// procs reads process states from a proc filesystem (the host's /proc;
// the DaemonSet runs with hostPID).
type procs struct{ root string }

// exited reports whether the process pid has exited or is exiting: it has
// the PF_EXITING flag, it is a zombie, or it is gone while sandboxPid (the
// pod's sandbox process, which outlives the containers) is visible — so
// this process can see the pod's processes at all. Unknown pids, or pids
// this process cannot see, say nothing: false. A pid the kernel reused
// within the moment between exit and check would read as running; the kill
// then goes ahead, as it did before this check.
func (p procs) exited(pid, sandboxPid uint32) bool {
	if pid == 0 {
		return false
	}
	st, err := p.stat(pid)
	switch {
	case err == nil:
		return st.state == 'Z' || st.state == 'X' || st.flags&pfExiting != 0
	case errors.Is(err, fs.ErrNotExist) && sandboxPid != 0:
		_, err := p.stat(sandboxPid)
		return err == nil
	}
	return false
}

// procStat is what exited reads from /proc/<pid>/stat.
type procStat struct {
	state byte   // field 3: R, S, D, Z, X, ...
	flags uint64 // field 9: the kernel's PF_* task flags
}

// stat reads the process's state and flags from /proc/<pid>/stat.
func (p procs) stat(pid uint32) (procStat, error) {
	b, err := os.ReadFile(filepath.Join(p.root, strconv.FormatUint(uint64(pid), 10), "stat"))
	if err != nil {
		return procStat{}, err
	}
	// "pid (comm) S ppid pgrp session tty_nr tpgid flags ...": comm may
	// hold spaces and parentheses.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return procStat{}, errors.New("malformed stat")
	}
	fields := bytes.Fields(b[i+1:])
	if len(fields) < 7 || len(fields[0]) != 1 {
		return procStat{}, errors.New("malformed stat")
	}
	flags, err := strconv.ParseUint(string(fields[6]), 10, 64)
	if err != nil {
		return procStat{}, errors.New("malformed stat: flags")
	}
	return procStat{state: fields[0][0], flags: flags}, nil
}
