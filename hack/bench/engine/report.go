//go:build linux

package main

import (
	"fmt"
	"io"
	"slices"
	"text/tabwriter"
)

// report prints, per kind, each model's median CPU and context switches
// per probe over the rounds, and probelet's ratio to the kubelet's model.
func report(w io.Writer, c config, all []sample) {
	procs := 0
	if len(all) > 0 {
		procs = all[0].Procs
	}
	fmt.Fprintf(w, "engine bench: %d workers at period 1 s, %s windows, %d rounds, GOMAXPROCS %d; medians over rounds\n",
		c.pods, c.window, c.rounds, procs)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "kind\tkubelet µs/probe\tprobelet µs/probe\tratio\tkubelet csw/probe\tprobelet csw/probe\tkubelet RSS MiB\tprobelet RSS MiB\t")
	for _, k := range c.kinds {
		kc, kw, kr := medians(all, modelKubelet, k)
		pc, pw, pr := medians(all, modelProbelet, k)
		fmt.Fprintf(tw, "%s\t%.1f\t%.1f\t%.2f\t%.2f\t%.2f\t%.1f\t%.1f\t\n", k, kc, pc, pc/kc, kw, pw, kr, pr)
	}
	_ = tw.Flush()
}

func medians(all []sample, model, kind string) (cpu, switches, rssMiB float64) {
	var cs, ws, rs []float64
	for _, s := range all {
		if s.Model == model && s.Kind == kind {
			cs = append(cs, s.cpuPerProbe())
			ws = append(ws, s.switchesPerProbe())
			rs = append(rs, float64(s.MaxRSSKiB)/1024)
		}
	}
	return median(cs), median(ws), median(rs)
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	xs = slices.Clone(xs)
	slices.Sort(xs)
	if len(xs)%2 == 1 {
		return xs[len(xs)/2]
	}
	return (xs[len(xs)/2-1] + xs[len(xs)/2]) / 2
}
