package testutil

import (
	"runtime"
	"strings"
	"testing"
	"time"
)

// Goroutines returns the stacks of the live goroutines that have a frame
// whose function name starts with prefix (a package path followed by a
// dot, say): the check that a component's Run left none of its own behind.
func Goroutines(prefix string) []string {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	var out []string
	for _, g := range strings.Split(string(buf), "\n\n") {
		for _, line := range strings.Split(g, "\n") {
			if strings.HasPrefix(line, prefix) {
				out = append(out, g)
				break
			}
		}
	}
	return out
}

// NoGoroutines fails the test unless every goroutine with a frame under
// one of prefixes has ended within waitLimit. A goroutine a WaitGroup
// joined may still be returning when Wait does, so it polls, as goleak
// does; a goroutine still blocked at the limit is a leak, printed.
func NoGoroutines(t testing.TB, prefixes ...string) {
	t.Helper()
	deadline := time.Now().Add(waitLimit)
	for {
		var left []string
		for _, p := range prefixes {
			left = append(left, Goroutines(p)...)
		}
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d goroutines left after %s:\n%s", len(left), waitLimit, strings.Join(left, "\n\n"))
		}
		time.Sleep(2 * time.Millisecond)
	}
}
