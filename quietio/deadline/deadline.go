// Package deadline gives a probe its timeout as a context that ends at a
// time kept by one timer file for the whole process, instead of a Go
// timer per probe.
//
// Why: a probe's context.WithTimeout arms a runtime timer. Stopped when
// the probe ends — long before it would fire — it stays in the runtime's
// timer heap until cleaned, and the runtime wakes both the thread waiting
// in epoll and its monitor thread (sysmon) at the times such timers name,
// in an agent that is otherwise idle: about two thread wake-ups per probe,
// more than a loopback exchange costs (hack/bench/engine). A timer file
// set to the earliest deadline and re-set (one raw system call) as probes
// come and go wakes nobody unless a probe overruns.
//
// The contexts returned behave as context.WithDeadline's: the same
// Deadline, Err (context.DeadlineExceeded once the deadline passed,
// context.Canceled once cancelled), Cause, and children ending with them
// (deadline_test.go holds both side by side).
package deadline

import (
	"context"
	"time"

	"github.com/probelet/probelet/quietio"
)

// WithTimeout is WithDeadline(parent, time.Now().Add(timeout)).
func WithTimeout(parent context.Context, timeout time.Duration) (context.Context, context.CancelFunc) {
	return WithDeadline(parent, time.Now().Add(timeout))
}

// WithDeadline returns a copy of parent that ends at d, with the cancel
// func that releases it, as context.WithDeadline does. A parent ending
// earlier, or a deadline already past, is context.WithDeadline's own case
// (it arms no timer for either); so is a process whose timer file could
// not be made, or that runs on Go timers (--io=std).
func WithDeadline(parent context.Context, d time.Time) (context.Context, context.CancelFunc) {
	if cur, ok := parent.Deadline(); (ok && !d.Before(cur)) || !time.Now().Before(d) || quietio.Off() {
		return context.WithDeadline(parent, d)
	}
	w := theWheel()
	if w == nil {
		return context.WithDeadline(parent, d)
	}
	t := newTimed(parent, d)
	// The caller gets the standard library's cancelCtx, a child of t: its
	// Err and Cause are the standard ones whatever asks.
	ctx, cancel := context.WithCancel(t)
	w.add(t)
	return ctx, func() {
		cancel()
		if w.remove(t) {
			t.end(context.Canceled)
		}
	}
}
