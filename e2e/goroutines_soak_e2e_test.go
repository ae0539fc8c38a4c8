//go:build e2e && soak

package e2e_test

import (
	"cmp"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"syscall"
)

// goroutineCensus makes probelet print every goroutine's stack (SIGQUIT,
// which ends the process; the caller starts it again) and counts them by
// the function each waits in and the one that started it: what a count
// that grew is made of.
func (d *daemon) goroutineCensus() string {
	d.t.Helper()
	if err := d.signal(syscall.SIGQUIT); err != nil {
		return err.Error()
	}
	return censusOf(d.stacks(1 << 20))
}

var (
	goroutineHeader = regexp.MustCompile(`^goroutine (\d+) .*?\[([^\],]+)`)
	createdBy       = regexp.MustCompile(`^created by (\S+)`)
)

// censusOf counts a Go goroutine dump's stacks by state, innermost frame
// outside the runtime and creator, largest first. Goroutine 0 (a thread's
// own stack, which runtime.NumGoroutine does not count) is left out.
func censusOf(dump string) string {
	counts := map[string]int{}
	for block := range strings.SplitSeq(dump, "\n\n") {
		lines := strings.Split(strings.TrimSpace(block), "\n")
		m := goroutineHeader.FindStringSubmatch(lines[0])
		if m == nil || m[1] == "0" {
			continue
		}
		top, by := "", "main"
		for _, l := range lines[1:] {
			if c := createdBy.FindStringSubmatch(l); c != nil {
				by = c[1]
			} else if fn := l[:max(strings.LastIndex(l, "("), 0)]; top == "" && !strings.HasPrefix(l, "\t") &&
				!strings.HasPrefix(fn, "runtime.") && !strings.HasPrefix(fn, "internal/") {
				top = fn
			}
		}
		top = cmp.Or(top, "the runtime")
		counts[fmt.Sprintf("%s in %s, started by %s", m[2], top, by)]++
	}
	keys := slices.SortedFunc(maps.Keys(counts), func(a, b string) int {
		return cmp.Or(counts[b]-counts[a], strings.Compare(a, b))
	})
	var b strings.Builder
	total := 0
	for _, k := range keys {
		fmt.Fprintf(&b, "%4d  %s\n", counts[k], k)
		total += counts[k]
	}
	return fmt.Sprintf("%d goroutines:\n%s", total, b.String())
}
