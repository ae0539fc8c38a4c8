package ebpftest

import (
	"os"
	"testing"
)

// RequireRoot skips t unless it runs as root. With CI set it fails
// instead, so a CI run never passes by skipping the kernel tests.
func RequireRoot(t testing.TB) {
	t.Helper()
	if os.Geteuid() == 0 {
		return
	}
	if os.Getenv("CI") != "" {
		t.Fatal("this test needs root (CAP_BPF, CAP_PERFMON, CAP_SYS_ADMIN, CAP_NET_ADMIN) and CI is set")
	}
	t.Skip("needs root")
}
