package killer

import (
	"errors"
	"io/fs"

	"github.com/probelet/probelet/internal/procstat"
)

// procs reads process states from a proc filesystem (the host's /proc;
// the DaemonSet runs with hostPID).
type procs struct{ root string }

// exited reports whether the process pid has exited or is exiting: it has
// the PF_EXITING flag, it is a zombie, or it is gone while sandboxPid (a
// witness: the pod's sandbox process, which outlives the containers, or the
// runtime's) is visible — so this process can see the pod's processes at
// all. Unknown pids, or pids
// this process cannot see, say nothing: false. A pid the kernel reused
// within the moment between exit and check would read as running; the kill
// then goes ahead, as it did before this check.
//
// PF_EXITING matters for a container's init: it has the flag while the
// kernel kills the other processes of its PID namespace and waits until
// they are reaped (an exec probe's among them, whose failure probelet may
// read first), before it turns zombie and the runtime can see the exit.
func (p procs) exited(pid, sandboxPid uint32) bool {
	if pid == 0 {
		return false
	}
	st, err := procstat.Read(p.root, int(pid))
	switch {
	case err == nil:
		return st.State == 'Z' || st.State == 'X' || st.Flags&procstat.FlagExiting != 0
	case errors.Is(err, fs.ErrNotExist) && sandboxPid != 0:
		_, err := procstat.Read(p.root, int(sandboxPid))
		return err == nil
	}
	return false
}
