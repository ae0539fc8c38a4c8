package client

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
)

// procs reads process states from a proc filesystem (the host's /proc;
// the DaemonSet runs with hostPID).
type procs struct{ root string }

// exited reports whether the process pid has exited: it is a zombie, or it
// is gone while sandboxPid (the pod's sandbox process, which outlives the
// containers) is visible — so this process can see the pod's processes at
// all. Unknown pids, or pids this process cannot see, say nothing: false.
// A pid the kernel reused within the moment between exit and check would
// read as running; the kill then goes ahead, as it did before this check.
func (p procs) exited(pid, sandboxPid uint32) bool {
	if pid == 0 {
		return false
	}
	state, err := p.state(pid)
	switch {
	case err == nil:
		return state == 'Z' || state == 'X'
	case errors.Is(err, fs.ErrNotExist) && sandboxPid != 0:
		_, err := p.state(sandboxPid)
		return err == nil
	}
	return false
}

// state is the process's state letter from /proc/<pid>/stat.
func (p procs) state(pid uint32) (byte, error) {
	b, err := os.ReadFile(filepath.Join(p.root, strconv.FormatUint(uint64(pid), 10), "stat"))
	if err != nil {
		return 0, err
	}
	// "pid (comm) S ...": comm may hold spaces and parentheses.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 || i+2 >= len(b) {
		return 0, errors.New("malformed stat")
	}
	return b[i+2], nil
}
