//go:build linux

package main

import (
	"fmt"
	"io"
	"text/tabwriter"
)

func printPerProbe(w io.Writer, c config, r []probeCost) {
	dial, sc := r[0], r[1]
	fmt.Fprintf(w, "One TCP probe, pod IP over veth (testing.Benchmark)\n")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "\t%s\t%s\t\n", dial.mode, sc.mode)
	fmt.Fprintf(tw, "ns/op\t%d\t%d\t\n", dial.nsPerOp, sc.nsPerOp)
	fmt.Fprintf(tw, "allocs/op\t%d\t%d\t\n", dial.allocsPerOp, sc.allocsPerOp)
	fmt.Fprintf(tw, "sockets left after %d probes\t%d\t%d\t\n", c.dials, dial.socketsLeft, sc.socketsLeft)
	tw.Flush()
	if sc.nsPerOp > 0 {
		fmt.Fprintf(w, "short-circuit is %.0fx cheaper per probe\n\n", float64(dial.nsPerOp)/float64(sc.nsPerOp))
	}
}

func printSimulation(w io.Writer, c config, s simulation) {
	fmt.Fprintf(w, "Node simulation: %d TCP probes every %v over %d listeners in %d netns, %v per mode\n",
		c.probes, c.period, c.listeners, c.netns, c.window)
	base, dial, sc := s.baseline, s.modes[0], s.modes[1]
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "\t%s\t%s\t%s\t\n", base.mode, dial.mode, sc.mode)
	fmt.Fprintf(tw, "probes answered\t%d\t%d\t%d\t\n", base.probes, dial.probes, sc.probes)
	fmt.Fprintf(tw, "unexpected results\t-\t%d\t%d\t\n", dial.wrong, sc.wrong)
	fmt.Fprintf(tw, "prober process CPU %%\t%.2f\t%.2f\t%.2f\t\n", base.cpuPercent, dial.cpuPercent, sc.cpuPercent)
	fmt.Fprintf(tw, "CPU %% spent probing (minus workers only)\t-\t%.2f\t%.2f\t\n",
		dial.cpuPercent-base.cpuPercent, sc.cpuPercent-base.cpuPercent)
	fmt.Fprintf(tw, "sockets left\t%d\t%d\t%d\t\n", base.socketsLeft, dial.socketsLeft, sc.socketsLeft)
	tw.Flush()
	fmt.Fprintf(w, "mismatches (short-circuit vs dial, every target): %d of %d; %d answered from eBPF\n",
		s.mismatches, s.compared, s.viaEBPF)
}
