// Package testutil holds the helpers the tests of several packages share.
package testutil

import (
	"testing"
	"time"
)

// waitLimit bounds a wait: long enough for a loaded 2-core machine, short
// enough that a broken handshake fails the test instead of its timeout.
const waitLimit = 10 * time.Second

// WaitFor polls cond, which another goroutine makes true, until it holds,
// and fails the test after waitLimit. It waits for an effect that has no
// event to wait on (a registration, a goroutine reaching a state); it never
// stands in for timing.
func WaitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(waitLimit)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", waitLimit, what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}
