//go:build linux

package main

import (
	"fmt"
	"io"
	"math"
	"runtime"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/probelet/probelet/quietio"
)

// Targets of issue 31.
const (
	// targetFloor: a short-circuited TCP probe costs at most this many
	// wake-up floors (hack/bench/wakefloor, measured in the same run) per
	// wake-up it takes (context switches per probe).
	targetFloor = 1.25
	// targetIO: a dial, HTTP GET or gRPC probe costs at most this share
	// of the kubelet's.
	targetIO = 0.8
	// targetExec: the agent's side of an exec probe.
	targetExec = 0.5
	// targetRSSPods and targetRSS: probelet's RSS with that many pods.
	targetRSSPods = 100
	targetRSS     = 40 << 20
	// minShortCircuitShare: the short-circuit row measures the
	// short-circuit only if this share of its probes was answered from
	// eBPF (issue 49: a tracker that did not load made it a dial's row).
	minShortCircuitShare = 0.95
)

// cost is CPU per probe in µs: the median over a window's parts and their
// range.
type cost struct{ median, lo, hi float64 }

// perProbe is the agent's CPU per run in µs, per part of its window: the
// part's CPU minus what the agent used over the same time without probes
// (the rate over its whole baseline window), over the part's runs.
func perProbe(w, base window) cost {
	var per []float64
	for _, p := range w.parts {
		if p.probes > 0 {
			per = append(per, (p.cpu.Seconds()-base.cpuRate()*p.elapsed.Seconds())/p.probes*1e6)
		}
	}
	if len(per) == 0 {
		return cost{math.NaN(), math.NaN(), math.NaN()}
	}
	slices.Sort(per)
	median := per[len(per)/2]
	if len(per)%2 == 0 {
		median = (per[len(per)/2-1] + per[len(per)/2]) / 2
	}
	return cost{median, per[0], per[len(per)-1]}
}

// String shows the median and, for several parts, the range.
func (c cost) String() string {
	if math.IsNaN(c.median) || c.lo == c.hi {
		return us(c.median)
	}
	return fmt.Sprintf("%s (%s–%s)", us(c.median), us(c.lo), us(c.hi))
}

// sysPerProbe is the agent's syscalls per run, minus its no-probe rate.
func sysPerProbe(w, base window) (syscalls, bool) {
	if !w.hasSys || !base.hasSys || w.sysProbes == 0 {
		return syscalls{}, false
	}
	idle := base.sys.scale(w.sysTime.Seconds() / base.sysTime.Seconds())
	return w.sys.minus(idle).scale(1 / w.sysProbes), true
}

func (r report) probeletBaseFor(x row) window {
	if x.tcpMode == "dial" && r.hasDialBase {
		return r.probeletDialBase
	}
	return r.probeletBase
}

// printOrigins sets each probe from the pod's namespace beside the same
// probe from the node's (issue 46: within 1.2× of it).
func printOrigins(w io.Writer, r report) {
	for _, x := range r.rows {
		if x.origin == "" {
			continue
		}
		for _, y := range r.rows {
			if y.origin == "" && y.kind == x.kind && y.tcpMode == x.tcpMode && y.io == x.io {
				p, n := perProbe(x.probelet, r.probeletBaseFor(x)), perProbe(y.probelet, r.probeletBaseFor(y))
				fmt.Fprintf(w, "%s: %s per probe from the pod's namespace, %s from the node's: %s\n", y.label, p, n, ratio(p.median, n.median))
			}
		}
	}
}

func printReport(w io.Writer, c config, r report) {
	fmt.Fprintf(w, "\nNode: %d pods, one readiness probe each at period 1 s, the kubelet (standalone) and probelet in turn on the same pods\n", r.n)
	fmt.Fprintf(w, "Ps: %s for both agents; %d round(s) per kind, alternating which agent goes first; wake-up floor (hack/bench/wakefloor, just before): %.1f cpu-µs\n", procs(c), c.rounds, r.floor)
	fmt.Fprintf(w, "CPU per probe = (agent CPU − its CPU rate with the same pods and no probes × time) / its probe runs, over %d × %v in %d parts each: median of the parts (range)\n", c.rounds, c.window, c.parts)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "probe\tkubelet µs/probe\tprobelet µs/probe\tprobelet/kubelet\tsyscalls/probe k|p\tRSS MiB k|p\truns/s k|p\t\n")
	for _, x := range r.rows {
		k, p := perProbe(x.kubelet, r.kubeletBase), perProbe(x.probelet, r.probeletBaseFor(x))
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s|%s\t%.1f|%.1f\t%.1f|%.1f\t\n", x.label, k, p, ratio(p.median, k.median),
			sysTotal(x.kubelet, r.kubeletBase), sysTotal(x.probelet, r.probeletBaseFor(x)),
			mib(x.kubelet.rss), mib(x.probelet.rss), x.kubelet.probeRate(), x.probelet.probeRate())
	}
	fmt.Fprintf(tw, "no probes (baseline): CPU ms/s\t%s\t%s\t\t\t%.1f|%.1f\t\t\n",
		rates(r.kubeletBase), rates(r.probeletBase), mib(r.kubeletBase.rss), mib(r.probeletBase.rss))
	tw.Flush()
	printOrigins(w, r)
	printDetail(w, r)
}

// printDetail shows probelet's wake-ups and their syscalls per probe, runs that did
// not succeed, and how TCP probes were answered.
func printDetail(w io.Writer, r report) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "probelet per probe\tswitches\tfutex\tepoll_pwait\tnanosleep\tnot successful k|p\tanswered as intended\t\n")
	for _, x := range r.rows {
		s, ok := sysPerProbe(x.probelet, r.probeletBaseFor(x))
		sys := "-\t-\t-\t-"
		if ok {
			sys = fmt.Sprintf("%.2f\t%.2f\t%.2f\t%.2f", s.switches, s.futex, s.epoll, s.nanosleep)
		}
		share := "-"
		if x.methodShare >= 0 {
			share = fmt.Sprintf("%.1f%% %s", 100*x.methodShare, x.method)
		}
		fmt.Fprintf(tw, "%s\t%s\t%.0f|%.0f\t%s\t\n", x.label, sys, x.kubelet.bad, x.probelet.bad, share)
	}
	tw.Flush()
}

// shortCircuitShortfalls lists the short-circuit rows, of every pod
// count, whose probes were not answered from eBPF often enough for their
// numbers to be the short-circuit's.
func shortCircuitShortfalls(reports []report) []string {
	var out []string
	for _, r := range reports {
		for _, x := range r.rows {
			if x.kind == kindTCP && x.method == "ebpf" && x.methodShare < minShortCircuitShare {
				out = append(out, fmt.Sprintf("%d pods: %s answered %.1f%% from eBPF (%s at least); is the tracker loaded? (probectl version, probelet_tcp_shortcircuit_unavailable)",
					r.n, x.label, 100*max(x.methodShare, 0), ratioPercent(minShortCircuitShare)))
			}
		}
	}
	return out
}

func ratioPercent(v float64) string { return fmt.Sprintf("%.0f%%", 100*v) }

// printSummary checks the targets over every pod count.
func printSummary(w io.Writer, reports []report) {
	fmt.Fprintf(w, "\nSummary (probelet µs per probe / the kubelet's, medians)\n")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	head := []string{"probe"}
	for _, r := range reports {
		head = append(head, fmt.Sprintf("%d pods", r.n))
	}
	head = append(head, "target")
	fmt.Fprintf(tw, "%s\t\n", strings.Join(head, "\t"))
	missed := 0
	for i, x := range reports[0].rows {
		cells := []string{x.label}
		limit, target := targetIO, "≤ "+ratioString(targetIO)+" of the kubelet"
		shortCircuit := x.kind == kindTCP && x.tcpMode == "auto"
		// --io=std is the libraries' cost, measured for comparison: the
		// targets are the quiet I/O's.
		reference := x.io == quietio.Std
		switch {
		case reference:
			target = "none (the libraries' cost, for reference)"
		case shortCircuit:
			target = fmt.Sprintf("≤ %.2f × the wake-up floor × wake-ups (context switches) per probe", targetFloor)
		case x.kind == kindExec:
			limit, target = targetExec, "≤ "+ratioString(targetExec)+" of the kubelet"
		}
		for _, r := range reports {
			if i >= len(r.rows) {
				continue
			}
			y := r.rows[i]
			k, p := perProbe(y.kubelet, r.kubeletBase), perProbe(y.probelet, r.probeletBaseFor(y))
			bound, against := k.median*limit, us(k.median)
			if shortCircuit {
				wakes := 1.0
				if s, ok := sysPerProbe(y.probelet, r.probeletBaseFor(y)); ok && s.switches > 0 {
					wakes = s.switches
				}
				bound = targetFloor * r.floor * wakes
				against = fmt.Sprintf("%.1f×%.2f", r.floor, wakes)
			}
			verdict := "ok"
			switch {
			case reference:
				verdict = "-"
			case shortCircuit && y.methodShare < minShortCircuitShare:
				verdict, missed = fmt.Sprintf("FAILED (%.1f%% from eBPF)", 100*max(y.methodShare, 0)), missed+1
			case !(p.median <= bound):
				verdict, missed = "MISSED", missed+1
			}
			cells = append(cells, fmt.Sprintf("%s / %s %s", us(p.median), against, verdict))
		}
		cells = append(cells, target)
		fmt.Fprintf(tw, "%s\t\n", strings.Join(cells, "\t"))
	}
	for _, r := range reports {
		if r.n != targetRSSPods {
			continue
		}
		rss := r.probeletBase.rss
		for _, x := range r.rows {
			rss = max(rss, x.probelet.rss)
		}
		verdict := "ok"
		if rss > targetRSS {
			verdict, missed = "MISSED", missed+1
		}
		fmt.Fprintf(tw, "probelet RSS, largest over its windows\t%.1f MiB %s\t\t≤ %d MiB at %d pods\t\n", mib(rss), verdict, targetRSS>>20, targetRSSPods)
	}
	tw.Flush()
	if missed > 0 {
		fmt.Fprintf(w, "%d target(s) missed\n", missed)
	} else {
		fmt.Fprintln(w, "every target met")
	}
}

// rates is a baseline's CPU in ms/s: the whole window and the range over
// its parts.
func rates(w window) string {
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, p := range w.parts {
		r := p.cpu.Seconds() / p.elapsed.Seconds() * 1e3
		lo, hi = min(lo, r), max(hi, r)
	}
	return fmt.Sprintf("%.2f (%.2f–%.2f)", w.cpuRate()*1e3, lo, hi)
}

func us(v float64) string {
	switch {
	case math.IsNaN(v):
		return "-"
	case math.Abs(v) >= 100:
		return fmt.Sprintf("%.0f", v)
	}
	return fmt.Sprintf("%.1f", v)
}

func ratio(p, k float64) string {
	if math.IsNaN(p) || math.IsNaN(k) || k <= 0 {
		return "-"
	}
	return ratioString(p / k)
}

// ratioString shows small ratios as 1/x, larger ones as a factor.
func ratioString(f float64) string {
	if f > 0 && f < 0.5 {
		return fmt.Sprintf("1/%.0f", 1/f)
	}
	return fmt.Sprintf("%.2f", f)
}

func sysTotal(w, base window) string {
	s, ok := sysPerProbe(w, base)
	if !ok {
		return "-"
	}
	return fmt.Sprintf("%.1f", s.total)
}

func mib(b int64) float64 { return float64(b) / (1 << 20) }

// procs says the agents' GOMAXPROCS.
func procs(c config) string {
	if c.cpus > 0 {
		return fmt.Sprintf("GOMAXPROCS=%d", c.cpus)
	}
	return fmt.Sprintf("Go's default (%d, one per CPU)", runtime.NumCPU())
}
