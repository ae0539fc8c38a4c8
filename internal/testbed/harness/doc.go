// Package harness is the machinery the containerd test bed
// (internal/testbed) and the cluster (internal/cluster) share; hack/lib is
// its shell half. It runs a hack/ directory's scripts with the shared build
// cache (Scripts), applies the one policy for tests that need root
// (RequireRoot), and owns the directories those tests start things in
// (Claim): made fresh, marked as this process's so gc.sh can tell when they
// are abandoned, kept on failure when asked, torn down once.
//
// Policy: everything needs root. Without root a test is skipped, unless the
// environment says the end-to-end tests must run (CI set, or
// PROBELET_E2E=1): then, as whenever a start fails, the test fails with the
// reason. PROBELET_TESTBED_KEEP=1 keeps a failed test's directories for
// inspection (the log says how to remove them).
package harness
