package main

import (
	"fmt"
	"io"
	"text/tabwriter"
	"time"
)

func printReport(w io.Writer, c config, res [2]phaseResult) {
	d, p := res[0], res[1]
	fmt.Fprintf(w, "\nCRI proxy side by side: one containerd test bed, a standalone kubelet v1.37 with Evented PLEG, %d pods, %v window\n", c.pods, c.window)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "\tkubelet → containerd\tkubelet → proxy\t\n")
	row := func(name, a, b string) { fmt.Fprintf(tw, "%s\t%s\t%s\t\n", name, a, b) }
	pct := func(v float64) string { return fmt.Sprintf("%.1f%%", 100*v) }
	row("containerd CPU (% of one core)", pct(d.containerdCPU), pct(p.containerdCPU))
	row("probelet CPU (the proxy's own cost)", "-", pct(p.probeletCPU))
	row("kubelet CPU", pct(d.kubeletCPU), pct(p.kubeletCPU))
	row("containerd + probelet CPU", pct(d.containerdCPU), pct(p.containerdCPU+p.probeletCPU))
	row("kubelet relists in the window", fmt.Sprint(d.relist.count), fmt.Sprint(p.relist.count))
	row("kubelet_pleg_relist_duration_seconds mean", ms(d.relist.mean()), ms(p.relist.mean()))
	row("  p50 (bucket interpolation)", ms(d.relist.quantile(0.5)), ms(p.relist.quantile(0.5)))
	row("  p99 (bucket interpolation)", ms(d.relist.quantile(0.99)), ms(p.relist.quantile(0.99)))
	for _, e := range []struct {
		name string
		a, b []time.Duration
		ma   int
		mb   int
	}{
		{"exit → kubelet PLEG ContainerDied", d.exitsBefore, p.exitsBefore, d.missedBefore, p.missedBefore},
		{"  same, after a containerd restart", d.exitsAfter, p.exitsAfter, d.missedAfter, p.missedAfter},
	} {
		sa, sb := summarize(e.a), summarize(e.b)
		row(e.name+" p50", ms(sa.p50), ms(sb.p50))
		row("    p99", ms(sa.p99), ms(sb.p99))
		row("    max", ms(sa.max), ms(sb.max))
		row("    samples (missed)", fmt.Sprintf("%d (%d)", sa.n, e.ma), fmt.Sprintf("%d (%d)", sb.n, e.mb))
	}
	row("kubelet evented_pleg_connection_success_count", fmt.Sprint(d.eventedConnections), fmt.Sprint(p.eventedConnections))
	row("kubelet evented_pleg_connection_error_count", fmt.Sprint(d.eventedConnErrors), fmt.Sprint(p.eventedConnErrors))
	tw.Flush()
	fmt.Fprintln(w, "The kubelet retries its event stream 5 times in its life and then falls back to its 1 s relist for good;")
	fmt.Fprintln(w, "through the proxy a containerd restart costs it none of them.")
}

func ms(d time.Duration) string {
	return fmt.Sprintf("%.2fms", float64(d)/float64(time.Millisecond))
}
