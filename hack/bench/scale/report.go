//go:build linux

package main

import (
	"fmt"
	"io"
	"math"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	dto "github.com/prometheus/client_model/go"
)

// report prints the figures of every size measured so far side by side.
func report(w io.Writer, c config, rs []*result) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight|tabwriter.Debug)
	row := func(name string, cell func(r *result) string) {
		fmt.Fprint(tw, name+"\t")
		for _, r := range rs {
			fmt.Fprint(tw, cell(r)+"\t")
		}
		fmt.Fprintln(tw)
	}
	fmt.Fprintf(w, "\nprobelet's cluster side at scale: %d gated pods per node, %d zones of a region plus a zone of %d nodes, grace %s\n\n",
		c.perNode, c.zones, c.smallZone, c.grace)
	row("nodes", func(r *result) string { return fmt.Sprint(r.nodes) })
	row("gated pods", func(r *result) string { return fmt.Sprint(r.pods) })
	row("setup (nodes, pods, kubelet status)", func(r *result) string { return r.setup.Round(time.Second).String() })
	row("controller leader: CPU, steady", func(r *result) string { return fmt.Sprintf("%.0f mcores", r.leader.cores*1000) })
	row("controller leader: RSS, steady", func(r *result) string { return mib(r.leader.rss) })
	row("controller follower: CPU, RSS", func(r *result) string {
		return fmt.Sprintf("%.0f mcores, %s", r.follower.cores*1000, mib(r.follower.rss))
	})
	row("leader change: SIGTERM → new leader marking", func(r *result) string { return r.handover.Round(100 * time.Millisecond).String() })
	row("leader change: new leader CPU, peak RSS", func(r *result) string {
		return fmt.Sprintf("%.0f mcores, %s", r.takeover.cores*1000, mib(r.takeover.peak))
	})
	row("leader change: marks written again", func(r *result) string {
		return fmt.Sprintf("%d (of %d marked; %d patches)", r.remarks, r.marksBeforeChange, r.remarkCalls)
	})
	row("silent probelet → pod marked: p50", func(r *result) string { return secs(r.markP50) })
	row("silent probelet → pod marked: p99", func(r *result) string { return secs(r.markP99) })
	row("silent probelet → pod marked: max", func(r *result) string { return secs(r.markMax) })
	row("pods marked within grace + 10 s", func(r *result) string {
		within := r.silentMarked == r.silentPods && r.markMax <= c.grace+10*time.Second
		return fmt.Sprintf("%d of %d (%s)", r.silentMarked, r.silentPods, yes(within))
	})
	row("60% of a large zone silent: marks/s", func(r *result) string { return zone(r.bigZone) })
	row("60% of the small zone silent: marks", func(r *result) string { return zone(r.smallZone) })
	for _, k := range keys(rs, func(r *result) rates { return r.controllerCalls }) {
		row("controller (both) calls/s: "+k, func(r *result) string { return fmt.Sprintf("%.3f", r.controllerCalls[k]) })
	}
	for _, k := range keys(rs, func(r *result) rates { return r.probeletCalls }) {
		row("probelet calls/s per node: "+k, func(r *result) string { return fmt.Sprintf("%.4f", r.probeletCalls[k]) })
	}
	row("probelet watches per node", func(r *result) string {
		if r.watchesPerNode == 0 {
			return "not simulated"
		}
		return fmt.Sprintf("%.0f", r.watchesPerNode)
	})
	row("probelet writes per readiness change", func(r *result) string { return fmt.Sprintf("%.2f", r.probeletWritesPerChange) })
	for _, k := range keys(rs, func(r *result) rates { return r.kubeletCalls }) {
		row("kubelet calls/s per node: "+k, func(r *result) string {
			if !r.kubelets {
				return "not simulated"
			}
			return fmt.Sprintf("%.4f", r.kubeletCalls[k])
		})
	}
	row("churn: creates/s, converted", func(r *result) string {
		return fmt.Sprintf("%.1f, %d of %d", r.churnRate, r.churnConverted, r.churnCreated)
	})
	row("churn: webhook p50, p99 (API server's)", func(r *result) string {
		return fmt.Sprintf("≤%s, ≤%s", ms(r.webhookP50), ms(r.webhookP99))
	})
	row("churn: webhook p50, p99 (its replica's own)", func(r *result) string {
		return fmt.Sprintf("≤%s, ≤%s", ms(r.webhookOwnP50), ms(r.webhookOwnP99))
	})
	row("churn: the replica's admissions by result", func(r *result) string {
		var parts []string
		for _, k := range sortedKeys(r.webhookResults) {
			parts = append(parts, fmt.Sprintf("%s %d", k, r.webhookResults[k]))
		}
		return strings.Join(parts, ", ")
	})
	row("churn: leader peak RSS, CPU", func(r *result) string {
		return fmt.Sprintf("%s, %.0f mcores%s", mib(r.churnLeader.peak), r.churnLeader.cores*1000, serves(r, "leader"))
	})
	row("churn: follower peak RSS, CPU", func(r *result) string {
		return fmt.Sprintf("%s, %.0f mcores%s", mib(r.churnFollow.peak), r.churnFollow.cores*1000, serves(r, "follower"))
	})
	row("etcd, compacted: probelet's objects", func(r *result) string {
		return fmt.Sprintf("%s of %s", mib(r.etcdAfter-r.etcdBefore), mib(r.etcdAfter))
	})
	row("API server live heap: probelet's objects, watches", func(r *result) string {
		return fmt.Sprintf("%s of %s", mib(int64(r.heapAfter-r.heapBefore)), mib(int64(r.heapAfter)))
	})
	row("API server RSS, steady", func(r *result) string { return mib(r.apiserverRSS) })
	_ = tw.Flush()
}

func keys(rs []*result, of func(*result) rates) []string {
	seen := map[string]bool{}
	for _, r := range rs {
		for k := range of(r) {
			seen[k] = true
		}
	}
	var out []string
	for k := range seen {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func sortedKeys(m map[string]int) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func zone(z zoneFigures) string {
	return fmt.Sprintf("%.2f (%d in %s; %d of %d silent)", float64(z.marked)/z.window.Seconds(), z.marked, z.window, z.silenced, z.size)
}

func mib(b int64) string { return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20)) }

// serves says which replica the webhook's calls went to.
func serves(r *result, which string) string {
	if r.webhookServedBy == which {
		return " (serves the webhook)"
	}
	return ""
}

func secs(d time.Duration) string { return fmt.Sprintf("%.1f s", d.Seconds()) }

func ms(s float64) string {
	if math.IsInf(s, 1) {
		return "∞"
	}
	return fmt.Sprintf("%g ms", s*1000)
}

func yes(ok bool) string {
	if ok {
		return "yes"
	}
	return "NO"
}

// histogram is a cumulative histogram's buckets and count.
type histogram struct {
	bounds []float64
	counts []float64 // cumulative
	count  float64
}

// histogramDelta is after − before of a histogram family, summed over
// the series with the label (every series for label "").
func histogramDelta(before, after *dto.MetricFamily, label, value string) histogram {
	sum := func(f *dto.MetricFamily) histogram {
		var h histogram
		if f == nil {
			return h
		}
		for _, m := range f.Metric {
			if (label != "" && !hasLabels(m, []string{label, value})) || m.Histogram == nil {
				continue
			}
			for i, b := range m.Histogram.Bucket {
				if i >= len(h.bounds) {
					h.bounds = append(h.bounds, b.GetUpperBound())
					h.counts = append(h.counts, 0)
				}
				h.counts[i] += float64(b.GetCumulativeCount())
			}
			h.count += float64(m.Histogram.GetSampleCount())
		}
		return h
	}
	a, b := sum(after), sum(before)
	for i := range a.counts {
		if i < len(b.counts) {
			a.counts[i] -= b.counts[i]
		}
	}
	a.count -= b.count
	return a
}

// quantile is the upper bound of the bucket holding the q-quantile: the
// API server's buckets are coarse, and a bound is what they can say.
func (h histogram) quantile(q float64) float64 {
	if h.count == 0 {
		return 0
	}
	for i, c := range h.counts {
		if c >= q*h.count {
			return h.bounds[i]
		}
	}
	return math.Inf(1)
}
