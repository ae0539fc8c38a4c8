package main

import (
	"fmt"
	"io"
	"text/tabwriter"
	"time"
)

// Targets of issue 3, from the NRI event to the first probe.
const (
	targetP50 = 5 * time.Millisecond
	targetP99 = 20 * time.Millisecond
)

func printReport(w io.Writer, c config, samples []sample, h histogram) {
	startedAt := func(s sample) time.Time { return s.startedAt }
	event := func(s sample) time.Time { return s.event }
	first := func(s sample) time.Time { return s.firstProbe }
	relist := func(s sample) time.Time { return s.relist }
	rows := []struct {
		name     string
		from, to func(sample) time.Time
	}{
		{"probelet: NRI event → first probe started", event, first},
		{"1 s relist: NRI event → container listed", event, relist},
		{"probelet: containerd startedAt → first probe started", startedAt, first},
		{"1 s relist: containerd startedAt → container listed", startedAt, relist},
		{"containerd startedAt → NRI event (both paths pay it)", startedAt, event},
	}
	fmt.Fprintf(w, "Container start → first probe, %d containers in %d pods, TCP readiness probe every 1 s (same run, same containers)\n", len(samples), c.pods)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	width := 0
	for _, r := range rows {
		width = max(width, len([]rune(r.name)))
	}
	fmt.Fprintf(tw, "%-*s\tp50\tp99\tmin\tmax\t\n", width, "")
	var probelet summary
	for i, r := range rows {
		s := summarize(between(samples, r.from, r.to))
		if i == 0 {
			probelet = s
		}
		fmt.Fprintf(tw, "%s%*s\t%s\t%s\t%s\t%s\t\n", r.name, width-len([]rune(r.name)), "", round(s.p50), round(s.p99), round(s.min), round(s.max))
	}
	tw.Flush()
	if h.count > 0 {
		fmt.Fprintf(w, "probelet in-process handoff (%s, %d events): p50 ≤ %s, p99 ≤ %s (bucket bounds), mean %.0fµs\n",
			handoffMetric, h.count, h.p50, h.p99, h.meanMicros)
	}
	verdict := "met"
	if probelet.p50 > targetP50 || probelet.p99 > targetP99 {
		verdict = "MISSED"
	}
	fmt.Fprintf(w, "target from the NRI event: p50 ≤ %v, p99 ≤ %v: %s (p50 %s, p99 %s)\n", targetP50, targetP99, verdict, round(probelet.p50), round(probelet.p99))
	fmt.Fprintln(w, "The NRI event time is taken by an observer plugin that NRI calls just before probelet (index 00 vs 10);")
	fmt.Fprintln(w, "the first probe time is the start of probelet's first recorded run; the relist time is when its ListContainers returned.")
}

// round keeps three significant digits.
func round(d time.Duration) string {
	switch a := max(d, -d); {
	case a >= time.Second:
		return d.Round(time.Millisecond).String()
	case a >= time.Millisecond:
		return d.Round(10 * time.Microsecond).String()
	default:
		return d.Round(time.Microsecond).String()
	}
}
