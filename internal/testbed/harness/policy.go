package harness

import (
	"os"
	"testing"

	"github.com/probelet/probelet/internal/testutil"
)

// verdict is what a test does when it cannot have root.
type verdict int

const (
	verdictRun verdict = iota
	verdictSkip
	verdictFail
)

// mustRun reports whether the environment demands the end-to-end tests:
// CI is set (to anything but false/0) or PROBELET_E2E=1.
func mustRun(getenv func(string) string) bool {
	return testutil.CISet(getenv("CI")) || getenv("PROBELET_E2E") == "1"
}

// decide applies the policy to a missing root privilege: skip on a
// developer's machine, fail where the tests must run.
func decide(root bool, getenv func(string) string) verdict {
	switch {
	case root:
		return verdictRun
	case mustRun(getenv):
		return verdictFail
	default:
		return verdictSkip
	}
}

// RequireRoot applies the policy for anything that needs root (a test bed,
// a control plane, a kubelet): it returns as root; otherwise it skips the
// test, or fails it where CI or PROBELET_E2E=1 demand the end-to-end tests.
// what names the thing that needs root.
func RequireRoot(t testing.TB, what string) {
	t.Helper()
	switch decide(os.Geteuid() == 0, os.Getenv) {
	case verdictSkip:
		t.Skipf("%s needs root; skipping (set PROBELET_E2E=1 to make this a failure)", what)
	case verdictFail:
		t.Fatalf("%s needs root, and CI or PROBELET_E2E=1 requires the end-to-end tests to run", what)
	}
}

// keepOnFailure reports whether a failed test's directories stay for
// inspection: one switch keeps beds, control planes and kubelets alike.
func keepOnFailure() bool { return os.Getenv("PROBELET_TESTBED_KEEP") == "1" }
