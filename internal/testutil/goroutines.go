package testutil

import (
	"runtime"
	"strings"
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
