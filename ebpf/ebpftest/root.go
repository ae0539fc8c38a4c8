package ebpftest

import (
	"os"
	"testing"

	"github.com/probelet/probelet/internal/testutil"
)

// RequireRoot skips t unless it runs as root. With CI set it fails
// instead, so a CI run never passes by skipping the kernel tests.
func RequireRoot(t testing.TB) {
	t.Helper()
	if os.Geteuid() == 0 {
		return
	}
	testutil.Unavailable(t, "this test needs root (CAP_BPF, CAP_PERFMON, CAP_SYS_ADMIN, CAP_NET_ADMIN)")
}
