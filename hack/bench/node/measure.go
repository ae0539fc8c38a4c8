//go:build linux

package main

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/probelet/probelet/internal/procusage"
)

// syscallEvents are what perf stat counts: every syscall, the three the
// agents' wake-ups are made of, and the context switches — a thread going
// to sleep to be woken again (or preempted): the wake-ups themselves. The
// Go runtime makes two epoll_pwait calls per wake-up of an idle process (a
// non-blocking poll, then the blocking one), the wake-up floor's C program
// one, so a wake-up is counted by its switch.
var syscallEvents = []string{
	"raw_syscalls:sys_enter",
	"syscalls:sys_enter_futex",
	"syscalls:sys_enter_epoll_pwait",
	"syscalls:sys_enter_nanosleep",
	"context-switches",
}

// syscalls are counts over a window.
type syscalls struct {
	total, futex, epoll, nanosleep, switches float64
}

func (s syscalls) minus(o syscalls) syscalls {
	return syscalls{s.total - o.total, s.futex - o.futex, s.epoll - o.epoll, s.nanosleep - o.nanosleep, s.switches - o.switches}
}

func (s syscalls) plus(o syscalls) syscalls {
	return syscalls{s.total + o.total, s.futex + o.futex, s.epoll + o.epoll, s.nanosleep + o.nanosleep, s.switches + o.switches}
}

func (s syscalls) scale(f float64) syscalls {
	return syscalls{s.total * f, s.futex * f, s.epoll * f, s.nanosleep * f, s.switches * f}
}

// countSyscalls counts process pid's syscalls (every thread, new ones
// included) for d with perf stat. Counting tracepoints in the kernel costs
// the process a little per syscall, so it runs after the CPU window, never
// during it.
func countSyscalls(ctx context.Context, pid int, d time.Duration) (syscalls, error) {
	args := []string{"stat", "-x", ",", "-p", strconv.Itoa(pid)}
	for _, e := range syscallEvents {
		args = append(args, "-e", e)
	}
	args = append(args, "--", "sleep", strconv.FormatFloat(d.Seconds(), 'f', 3, 64))
	cmd := exec.CommandContext(ctx, "perf", args...)
	var out bytes.Buffer
	cmd.Stderr = &out // perf stat reports on stderr
	if err := cmd.Run(); err != nil {
		return syscalls{}, fmt.Errorf("perf stat: %w: %s", err, out.String())
	}
	counts := map[string]float64{}
	for _, line := range strings.Split(out.String(), "\n") {
		f := strings.Split(line, ",")
		if len(f) < 3 {
			continue
		}
		switch v, err := strconv.ParseFloat(f[0], 64); {
		case err == nil:
			counts[f[2]] = v
		case f[0] == "<not counted>":
			// The process never ran while perf watched: no syscalls.
			counts[f[2]] = 0
		}
	}
	if _, ok := counts[syscallEvents[0]]; !ok {
		return syscalls{}, fmt.Errorf("perf stat counted nothing: %s", out.String())
	}
	return syscalls{counts[syscallEvents[0]], counts[syscallEvents[1]], counts[syscallEvents[2]], counts[syscallEvents[3]], counts[syscallEvents[4]]}, nil
}

// havePerf reports whether perf can count syscall tracepoints here.
func havePerf() bool {
	err := exec.Command("perf", "stat", "-x", ",", "-e", syscallEvents[0], "--", "true").Run()
	return err == nil
}

// window is what one agent did over one measurement window, measured in
// parts (its median and range say how steady the agent was).
type window struct {
	parts []part
	bad   float64 // runs that did not succeed
	rss   int64
	// sys are the syscalls over the syscall window, sysProbes the runs in it.
	sys       syscalls
	sysTime   time.Duration
	sysProbes float64
	hasSys    bool
}

// part is one stretch of a window.
type part struct {
	elapsed time.Duration
	cpu     time.Duration
	probes  float64 // runs the agent counted (prober_probe_total)
}

func (w window) total() part {
	var t part
	for _, p := range w.parts {
		t.elapsed += p.elapsed
		t.cpu += p.cpu
		t.probes += p.probes
	}
	return t
}

// cpuRate is CPU seconds per second.
func (w window) cpuRate() float64 {
	t := w.total()
	return t.cpu.Seconds() / t.elapsed.Seconds()
}

// probeRate is runs per second.
func (w window) probeRate() float64 {
	t := w.total()
	return t.probes / t.elapsed.Seconds()
}

// merge adds o's parts and counts to w: one agent's windows of several
// rounds, judged together.
func (w window) merge(o window) window {
	w.parts = append(append([]part(nil), w.parts...), o.parts...)
	w.bad += o.bad
	w.rss = max(w.rss, o.rss)
	if o.hasSys {
		if w.hasSys {
			w.sys = w.sys.plus(o.sys)
		} else {
			w.sys = o.sys
		}
		w.sysTime += o.sysTime
		w.sysProbes += o.sysProbes
		w.hasSys = true
	}
	return w
}

// agent is a process whose probing is measured.
type agent interface {
	name() string
	pid() (int, error)
	// probeCounts returns the agent's runs so far and how many did not succeed.
	probeCounts(ctx context.Context) (runs, bad float64, err error)
}

// measure runs one CPU window in e.c.parts parts, then (with perf) one
// syscall window, on a. The agent's metrics are read between the parts,
// outside the CPU clock's readings, so scraping them costs the window
// nothing.
func (e *env) measure(ctx context.Context, a agent) (window, error) {
	pid, err := a.pid()
	if err != nil {
		return window{}, err
	}
	var w window
	p0, b0, err := a.probeCounts(ctx)
	if err != nil {
		return w, err
	}
	runs, bad := p0, b0
	for range e.c.parts {
		c0, err := procusage.CPUTime(pid)
		if err != nil {
			return w, err
		}
		t0 := time.Now()
		if err := sleep(ctx, e.c.window/time.Duration(e.c.parts)); err != nil {
			return w, err
		}
		c1, err := procusage.CPUTime(pid)
		if err != nil {
			return w, err
		}
		elapsed := time.Since(t0)
		r, b, err := a.probeCounts(ctx)
		if err != nil {
			return w, err
		}
		w.parts = append(w.parts, part{elapsed: elapsed, cpu: c1 - c0, probes: r - runs})
		runs, bad = r, b
	}
	w.bad = bad - b0
	if w.rss, err = procusage.RSS(pid); err != nil {
		return w, err
	}
	if e.perf && e.c.sysWindow > 0 {
		t := time.Now()
		s, err := countSyscalls(ctx, pid, e.c.sysWindow)
		if err != nil {
			return w, err
		}
		w.sysTime = time.Since(t)
		r, _, err := a.probeCounts(ctx)
		if err != nil {
			return w, err
		}
		w.sys, w.sysProbes, w.hasSys = s, r-runs, true
	}
	t := w.total()
	e.logf("%s: %.0f runs (%.0f not successful) in %v, CPU %v, RSS %.1f MiB", a.name(), t.probes, w.bad,
		t.elapsed.Round(time.Millisecond), t.cpu.Round(time.Microsecond), float64(w.rss)/(1<<20))
	return w, nil
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
