//go:build e2e

package e2e_test

import (
	"bytes"
	"sync"
	"testing"
	"time"
)

// pollEvery is how often conditions are checked: often enough to time
// transitions to a tenth of the shortest probe period.
const pollEvery = 100 * time.Millisecond

// eventually polls cond until it holds and fails the test with what cond
// last reported when timeout passes first. It returns when cond held.
func eventually(t *testing.T, timeout time.Duration, what string, cond func() (ok bool, state string)) time.Time {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		ok, state := cond()
		if ok {
			return time.Now()
		}
		if time.Now().After(deadline) {
			t.Fatalf("waited %v for %s; last state: %s", timeout, what, state)
		}
		time.Sleep(pollEvery)
	}
}

// during checks that cond holds at every poll for d, failing at once when
// it does not: the bounded observation behind "nothing happens" claims.
func during(t *testing.T, d time.Duration, what string, cond func() (ok bool, state string)) {
	t.Helper()
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		if ok, state := cond(); !ok {
			t.Fatalf("%s stopped holding: %s", what, state)
		}
		time.Sleep(pollEvery)
	}
}

// within polls cond until it holds (true) or timeout passes (false).
func within(timeout time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(pollEvery)
	}
	return true
}

// syncBuffer is a bytes.Buffer a child process writes while a test reads.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
