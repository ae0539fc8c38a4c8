package tracker_test

import (
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/probelet/probelet/ebpf/ebpftest"
	"github.com/probelet/probelet/ebpf/listeners"
)

const tracefsChildEnv = "PROBELET_TEST_TRACEFS_CHILD"

func TestListenWithoutBindWithExitHook(t *testing.T) {
	ebpftest.RequireRoot(t)
	if _, err := os.Stat("/sys/kernel/tracing/events/syscalls"); err != nil {
		if os.Getenv(tracefsChildEnv) != "" {
			t.Fatalf("tracefs still missing in the child: %v", err)
		}
		rerunWithTracefs(t)
		return
	}
	tr, ino := start(t)
	if !tr.ListenExitHooked() {
		t.Fatal("tracefs is mounted but sys_exit_listen was not attached")
	}
	l := listen(t, ebpftest.ListenConfig{NoBind: true})
	sync(t, tr)
	expect(t, tr, ino, l.Port, listeners.Reachable)
	l.Close()
	sync(t, tr)
	expect(t, tr, ino, l.Port, listeners.Refused)
}

// rerunWithTracefs runs the calling test again in a private mount
// namespace with tracefs mounted, leaving the host's mounts alone.
func rerunWithTracefs(t *testing.T) {
	t.Helper()
	script := `mount -t tracefs tracefs /sys/kernel/tracing && exec "$@"`
	cmd := exec.Command("unshare", "--mount", "--propagation", "private", "sh", "-c", script,
		"sh", os.Args[0], "-test.run", "^"+t.Name()+"$", "-test.v")
	cmd.Env = append(os.Environ(), tracefsChildEnv+"=1")
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "--- PASS: "+t.Name()) {
		t.Fatalf("child with tracefs: %v\n%s", err, out)
	}
	t.Logf("ran in a private mount namespace with tracefs:\n%s", out)
}
