package testutil

import (
	"os"
	"strings"
	"testing"
)

// CISet is the one CI policy: CI set to anything but "", "false" or "0"
// (any case, spaces trimmed) demands that every test runs. hack/lib/ci.sh
// is the same rule for the scripts and the Makefile.
func CISet(value string) bool {
	v := strings.ToLower(strings.TrimSpace(value))
	return v != "" && v != "false" && v != "0"
}

// CI reports whether this run is CI's (CISet of $CI).
func CI() bool { return CISet(os.Getenv("CI")) }

// Unavailable ends a test whose prerequisite (a tool, a privilege, a built
// helper) is missing: a skip on a developer's machine, a failure in CI, so
// a CI run never passes by skipping.
func Unavailable(t testing.TB, format string, args ...any) {
	t.Helper()
	if CI() {
		t.Fatalf("CI is set, and "+format, args...)
	}
	t.Skipf(format, args...)
}
